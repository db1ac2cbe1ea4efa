package emulator

// FindOrInstall exposes findOrInstall, what Start runs to find Azurite
// (writing its progress to os.Stderr), to the external tests.
var FindOrInstall = findOrInstall
