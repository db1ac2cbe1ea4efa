package retry

// Test-only names for the unexported classification, so that the external
// tests of package retry_test can check it directly.
var (
	IsRetryable     = isRetryable
	RetryableStatus = retryableStatus
)

// ThrottleFloor is the least wait after a 429 that names none.
const ThrottleFloor = throttleFloor
