# Summarises go test -bench output: one line per benchmark with ns/op,
# allocs/op and every custom metric (rates, and tablekit/raw ratios, which
# the paired benchmarks measure by interleaving tablekit and raw calls).
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name)
  line = sprintf("%-42s", name)
  for (i = 3; i < NF; i += 2) {
    unit = $(i+1)
    if (unit == "B/op") continue
    line = line sprintf("  %s %s", $i, unit)
  }
  print line
}
