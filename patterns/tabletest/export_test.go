package tabletest

// OptedOut exposes optedOut to the external tests.
var OptedOut = optedOut

// FindOrInstall exposes findOrInstall, what StartEmulator runs to find
// Azurite (writing its progress to os.Stderr), to the external tests.
var FindOrInstall = findOrInstall
