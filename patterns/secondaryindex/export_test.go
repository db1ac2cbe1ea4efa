package secondaryindex

// SetHook installs a test hook called before each step of the worker's
// reconciliation ("read", "put", "delete", "reread"); an error it returns
// is a crash there.
func SetHook[T any](s *Store[T], h func(step string) error) { s.hook = h }
