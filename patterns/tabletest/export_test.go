package tabletest

// OptedOut exposes optedOut to the external tests.
var OptedOut = optedOut
