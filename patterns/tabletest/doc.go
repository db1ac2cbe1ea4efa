// Package tabletest gives tests, examples and demos a live storage account:
// the one named by AZURE_STORAGE_CONNECTION_STRING when it is set, otherwise
// an Azurite emulator (the official Azure Storage emulator) that it starts
// itself.
//
// # When to use it
//
// Use it in tests of code that talks to Azure Table, Queue or Blob storage,
// including your own application's tests: the same test then runs against a
// throw-away local emulator on a laptop or in CI, and against a real account
// when the environment variable points at one.
//
// # The emulator
//
// New and ConnectionString start Azurite with Node.js on first use. They
// find Azurite at the path in TABLEKIT_AZURITE (its dist/src/azurite.js or the azurite
// command), else in node_modules/azurite from the working directory upwards,
// else as the azurite command on PATH, else in a per-user cache. tablekit's
// own tests use the version pinned by its package-lock.json, which make test
// and make demo install into node_modules.
//
// Azurite runs in memory on loopback ports the operating
// system picks (so test binaries running in parallel never collide), and
// waits until the blob, queue and table services answer. The process is tied
// to its parent: it exits when Stop is called and, as a backstop, when the
// parent process exits for any reason (a watchdog in the emulator process
// watches the pipe to its parent). Should the emulator die while tests run,
// ConnectionString, New and the clients of every Env fail at once with an
// error saying that it exited, with its last lines of output, instead of
// retrying against a closed port.
//
// One emulator is shared by all tests of a test binary. It is started on first
// use by New or ConnectionString; tabletest.Main stops it when the tests end:
//
//	func TestMain(m *testing.M) { tabletest.Main(m) }
//
// # The first run on a machine
//
// Tests of a module that depends on tablekit run in that module's folders,
// which hold no Azurite. When it is found nowhere and npm is on PATH,
// the emulator's start installs the version tablekit pins (the one its
// package-lock.json names) into the per-user cache: tablekit in
// os.UserCacheDir, or the folder in TABLEKIT_CACHE. That happens once per machine,
// puts about 360 MB there and takes minutes (2 min 23 s measured with an
// empty npm cache), the last minute or more of which npm spends unpacking
// without a word. Later runs find it there at once. TABLEKIT_NO_INSTALL=1 refuses the
// install; Azurite on PATH (`npm install -g azurite`), in
// the module's own node_modules or named by TABLEKIT_AZURITE serves as
// well.
//
// While it installs, the test binary writes to its standard error why
// (Azurite was found nowhere), what and where (the version, the folder),
// that it happens once, and npm's progress. go test shows that as it comes
// only when it runs one package verbosely (go test -v ./pkg) or in the
// package's folder without arguments (go test). Otherwise go test holds a
// package's output until the package ends and then shows it only with -v
// or when the package fails: the first go test ./... on a machine prints
// nothing for minutes, then its ok lines. Each test binary of such a run
// installs a copy of its own at the same time (the first to finish is
// kept, the others are deleted), so to watch one install, run the tests of
// one package first: go test -v ./pkg.
//
// # A Cosmos DB account
//
// AZURE_STORAGE_CONNECTION_STRING may name a Cosmos DB Table API account
// (its TableEndpoint is <account>.table.cosmos.azure.com): the tests'
// tables are then on Cosmos DB, and tablekit takes its Cosmos profile. Such
// an account has no queues or blobs: tests that need them use the Storage
// account of TABLEKIT_STORAGE_CONNECTION_STRING
// and skip when it is not set.
//
// # Isolation
//
// Every table, queue and container an Env hands out has a fresh name derived
// from the test's name (Name) and is deleted when the test ends, so tests may
// run in parallel against one emulator or one real account. A pattern that
// creates tables itself, under a prefix (rotation: a table per period),
// takes Env.Prefix: a fresh prefix short enough for any such pattern, under
// which every table is deleted when the test ends.
//
// # A missing emulator fails
//
// When Azurite is found nowhere and cannot be installed (npm is missing or
// fails, or TABLEKIT_NO_INSTALL=1), New fails the test with an error that
// lists where it looked, why it was not installed and the fixes
// (`npm install -g azurite` among them). Users without Node.js may set TABLEKIT_NO_EMULATOR=1 to
// skip such tests instead (and the examples of binaries whose TestMain calls
// Main, which cannot skip themselves); the variable is ignored when CI is
// set, so CI never silently skips.
//
// # Emulator differences
//
// Azurite accepts some requests the real service rejects (mixed-partition
// batches, more than 252 properties, entities over 1 MiB, SAS key ranges are
// not enforced) and behaves differently in places (deleted table names are
// reusable at once). tablekit's packages validate these limits themselves, so
// tests against the emulator exercise the same client-side checks that
// protect production code.
//
// Azurite also rejects what the real service accepts: a PartitionKey or
// RowKey longer than 512 UTF-16 code units gets 400 InvalidInput from
// Azurite, while the real service allows 1,024 characters (Microsoft's
// scalability and performance targets for Table storage; keys.MaxKeyLength).
// Tests of keys between 513 and 1,024 characters therefore need a real
// account: set AZURE_STORAGE_CONNECTION_STRING, and skip them when it is not
// set.
//
// Other Azurite 3.37 behaviours found while testing tablekit: a filter
// comparing an Int64 literal with a property stored as Int32 answers 500
// (the real service just matches nothing; a Table[T] types literals by
// field, so it never sends one); a $batch whose multipart boundary suffix
// starts with '-' answers 500; a $batch through a table SAS answers 403
// AuthorizationFailure (an account SAS works); a stored access policy must
// carry Start, Expiry and Permission (400 otherwise), and a policy's values
// silently win over the SAS's; and rows written by one transaction get
// distinct ETags.
package tabletest
