# Summarises `go test -bench` output (several -count runs of each benchmark
# may be concatenated): every value is printed as its median over the runs,
# with [min..max] when there was more than one run.
#
# Emulator benchmarks report metrics per side (tablekit, raw, rawedm, http,
# with an optional -c1/-c4 suffix) as SIDE-METRIC, for example
# tablekit-c4-entities/s; those become a side-by-side table with one row per
# side, followed by the ratios the benchmark reported:
#   A/B       speed of side A over side B (above 1: A is faster; B = http:
#             the fraction of the emulator's ceiling that A reaches),
#   A/B-cpu   CPU time per entity of A over B (below 1: A is cheaper).
# Other benchmarks get one line each; a sub-benchmark X with a sibling
# named tablekit (BenchmarkCodec) also gets X/tablekit for ns/op and
# allocs/op (above 1: tablekit is faster, allocates less).
#
# Usage: awk -f .ci/benchtable.awk bench.out

function sidemetric(unit,    i, m) {
  for (i = 1; i <= nmetrics; i++) {
    m = metrics[i]
    if (length(unit) > length(m) + 1 && substr(unit, length(unit) - length(m)) == "-" m) return m
  }
  return ""
}

# stats(key) sets MED, MIN, MAX and CNT from the values stored under key.
function stats(key,    n, i, j, t, a) {
  n = cnt[key]
  for (i = 1; i <= n; i++) a[i] = val[key, i]
  for (i = 2; i <= n; i++) {        # insertion sort: n is small
    t = a[i]
    for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
    a[j + 1] = t
  }
  CNT = n; MIN = a[1]; MAX = a[n]
  MED = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

# rank orders sides: tablekit, raw, rawedm, http; -c4 before -c1.
function rank(s,    base, r) {
  base = s; sub(/-c[0-9]+$/, "", base)
  r = (base == "tablekit") ? 1 : (base == "raw") ? 2 : (base == "rawedm") ? 3 : (base == "http") ? 4 : 5
  return r * 10 + ((s ~ /-c1$/) ? 5 : 0)
}

function num(v) {
  if (v < 0) return "-" num(-v)
  if (v >= 1000) return sprintf("%.0f", v)
  if (v >= 100) return sprintf("%.1f", v)
  if (v >= 10) return sprintf("%.2f", v)
  return sprintf("%.3f", v)
}

function cell(key) {
  if (!(key in cnt)) return "-"
  stats(key)
  if (CNT == 1) return num(MED)
  return num(MED) " [" num(MIN) ".." num(MAX) "]"
}

BEGIN {
  # The targets of the issue "Performance: honest baselines":
  # benchmark|metric|comparison|threshold|what it means. The allocation
  # targets halve the numbers of the earlier BENCHMARKS.md (codec 14
  # allocs; scan 93 allocs/entity; bulk load about 200 allocs/entity,
  # derived from that run's total).
  ntargets = split("BulkLoad/entities=10000|tablekit-c4/raw-c4|>=|1.3|bulk load 10k, concurrency 4, speed vs raw;" \
    "Stream/entities=10000|tablekit/raw|>=|1.3|streaming scan 10k, entities/s vs raw;" \
    "Stream/entities=10000|tablekit/raw-cpu|<=|0.7|streaming scan 10k, Go CPU per entity vs raw;" \
    "PointOps/insert|tablekit/raw|>=|1.1|point insert, speed vs raw;" \
    "PointOps/get|tablekit/raw|>=|1.0|point get, speed vs raw;" \
    "Codec/tablekit|allocs/op|<=|7|codec allocs per entity (was 14);" \
    "Stream/entities=10000|tablekit-allocs/entity|<=|46.5|scan allocs per entity (was 93);" \
    "BulkLoad/entities=10000|tablekit-c4-allocs/entity|<=|100|bulk load allocs per entity (was about 200)", targets, ";")
  nmetrics = split("entities/s cpu-us/entity allocs/entity B/entity peak-heap-KB peak-rss-KB rss-growth-KB hwm-growth-KB", metrics, " ")
}

/^Benchmark/ && NF >= 4 {
  name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
  if (!(name in seen)) { seen[name] = 1; order[++nb] = name }
  runs[name]++
  for (i = 3; i < NF; i += 2) {
    unit = $(i + 1); v = $i + 0
    key = name SUBSEP unit
    if (!(key in cnt)) units[name, ++nu[name]] = unit
    val[key, ++cnt[key]] = v
    m = sidemetric(unit)
    if (m != "") {
      s = substr(unit, 1, length(unit) - length(m) - 1)
      if (!((name, "side", s) in has)) { has[name, "side", s] = 1; sides[name, ++ns[name]] = s }
      if (!((name, "metric", m) in has)) { has[name, "metric", m] = 1 }
    }
  }
}

END {
  for (b = 1; b <= nb; b++) {
    name = order[b]
    printf "\n%s  (%d run%s; median [min..max])\n", name, runs[name], runs[name] == 1 ? "" : "s"
    if (ns[name] == 0) {
      line = ""
      for (u = 1; u <= nu[name]; u++) {
        unit = units[name, u]
        if (unit == "B/op") continue
        line = line sprintf("  %s %s", cell(name SUBSEP unit), unit)
      }
      parent = name; sub(/\/[^\/]*$/, "", parent)
      tk = parent "/tablekit"
      if (parent != name && name != tk && (tk in seen)) {
        stats(name SUBSEP "ns/op"); mine = MED; stats(tk SUBSEP "ns/op")
        line = line sprintf("  %s %s/tablekit-ns", num(mine / MED), substr(name, length(parent) + 2))
        stats(name SUBSEP "allocs/op"); mine = MED; stats(tk SUBSEP "allocs/op")
        if (MED > 0) line = line sprintf("  %s %s/tablekit-allocs", num(mine / MED), substr(name, length(parent) + 2))
      }
      print line
      continue
    }
    # Side-by-side table: one row per side, one column per metric present.
    for (i = 2; i <= ns[name]; i++) {
      t = sides[name, i]
      for (j = i - 1; j >= 1 && rank(sides[name, j]) > rank(t); j--) sides[name, j + 1] = sides[name, j]
      sides[name, j + 1] = t
    }
    hdr = sprintf("  %-14s", "side")
    for (k = 1; k <= nmetrics; k++)
      if ((name, "metric", metrics[k]) in has) hdr = hdr sprintf("  %-26s", metrics[k])
    sub(/ +$/, "", hdr); print hdr
    for (j = 1; j <= ns[name]; j++) {
      s = sides[name, j]
      line = sprintf("  %-14s", s)
      for (k = 1; k <= nmetrics; k++)
        if ((name, "metric", metrics[k]) in has) line = line sprintf("  %-26s", cell(name SUBSEP s "-" metrics[k]))
      sub(/ +$/, "", line); print line
    }
    # Ratios between sides, those against the ceiling (http) next, then
    # the totals of a whole iteration (all sides together).
    for (pass = 1; pass <= 3; pass++)
      for (u = 1; u <= nu[name]; u++) {
        unit = units[name, u]
        if (sidemetric(unit) != "" || unit == "B/op") continue
        kind = (unit ~ /\/op$/) ? 3 : (unit ~ /\/http/) ? 2 : 1
        if (kind != pass) continue
        printf "  %-28s %s%s\n", unit, cell(name SUBSEP unit), kind == 3 ? "  (whole iteration, all sides)" : ""
      }
  }
  print "\nTargets (median of the runs)"
  for (t = 1; t <= ntargets; t++) {
    split(targets[t], f, "|")
    key = f[1] SUBSEP f[2]
    if (!(key in cnt)) { printf "  %-52s %-8s %s %-5s  not measured\n", f[5], "-", f[3], f[4]; continue }
    stats(key)
    met = (f[3] == ">=") ? (MED >= f[4] + 0) : (MED <= f[4] + 0)
    printf "  %-52s %-8s %s %-5s  %s\n", f[5], num(MED), f[3], f[4], met ? "met" : "NOT MET"
  }
}
