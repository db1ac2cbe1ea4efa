package transfer

// SetHook installs on o a test hook called at each step boundary
// ("manifest", "chunk" of Export; "read", "written", "checkpoint" of
// Import; "blobs" of all three; "page" of Copy, after a transaction's
// rows); an error it returns stops the operation there,
// as a crash would.
func SetHook(o *Options, hook func(step string) error) { o.hook = hook }
