package largeentity

// SetHook installs a test hook called at each step boundary of a
// multi-step operation ("upload", "entity", "delete blobs"); an error it
// returns stops the operation there, as a crash would.
func SetHook[T any](s *Store[T], hook func(step string) error) { s.hook = hook }

// Defaults, for tests.
const (
	DefaultGraceForTest     = defaultGrace
	DefaultThresholdForTest = defaultThreshold
)
