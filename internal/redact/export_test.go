package redact

// MaxDecodings is maxDecodings, for the fuzz test.
const MaxDecodings = maxDecodings
