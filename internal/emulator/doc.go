// Package emulator finds, installs and runs Azurite, the Azure Storage
// emulator, for package tabletest (which documents the behaviour users
// see) and for tablekit's own tests: Start runs one in memory on loopback
// ports the operating system picks, tied to its parent process; FindAzurite
// and InstallAzurite find it or install the pinned version (AzuriteVersion)
// into the per-user cache. It also names the environment variables
// tabletest reads and the emulator's well-known development account
// (DevAccount, DevKey), which tests use to build clients of their own.
package emulator
