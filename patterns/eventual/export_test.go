package eventual

// SetHook installs a test hook called at every step boundary of Commit and
// of the worker; an error it returns is a crash at that point.
func SetHook(q *Queue, h func(step string) error) { q.hook = h }
