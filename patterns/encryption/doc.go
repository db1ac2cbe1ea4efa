// Package encryption is client-side property encryption for tablekit
// tables (the successor of the legacy .NET TableEncryptionPolicy): chosen
// properties of an entity are encrypted with AES-256-GCM before they
// leave the process, so the service, its operators and anyone who reads
// the storage account never see them; an optional blind index (an
// HMAC-SHA256 of the normalized value) still finds entities by an
// encrypted value.
//
//	keys, err := encryption.NewStaticKeys("2024-06", map[string][]byte{"2024-06": dataKey})
//	tbl, err := table.New[table.Dynamic](client)
//	people, err := encryption.New[Person](tbl, keys, []string{"Email", "SSN"}, &encryption.Options{
//		Indexes:  []encryption.Index{{Field: "Email", Normalize: encryption.TrimLower}},
//		IndexKey: indexKey,
//	})
//	_, err = people.Insert(ctx, p)                     // Email and SSN leave encrypted
//	e, err := people.Get(ctx, "Sales", "000223", nil)  // and come back decrypted, in e.Value
//	for e, err := range people.Find(ctx, "Sales", "Email", "jo@contoso.com") { ... }
//
// [New] takes the table, the [KeyProvider] and the fields to encrypt, by
// their stored property names (no struct tags: the choice is in one place,
// beside the keys); its [Options] (nil for none) add blind indexes. It
// takes a *table.Table[table.Dynamic], as every package that stores rows
// of its own making from T does (here T's values sealed), with T as its
// explicit type parameter.
//
// A [Table][T] mirrors [table.Table][T], with the same shapes: Insert,
// Upsert and Update take a T (whose key fields give its keys) and return
// a [table.Result]; Delete, Get and Modify take the keys; Get and Modify
// return a [table.Entity][T] (keys, ETag, value); Query yields T and
// QueryEntities yields [table.Entity][T]; QueryPage returns a page;
// InsertOps, UpsertOps and UpdateOps give a write as a [table.Change] that
// joins a composed write (they take ctx, because sealing fetches the
// current key, and return the error of a value they cannot seal). [Table.Find] and [Table.Where] find entities by a
// blind index, and [Table.Reencrypt] rewrites rows after a key rotation. A
// Table is also a patterns/secondaryindex Sealer ([Table.Seal],
// [Table.Open], [Table.Sealed]): set it as a Store's Options.Sealer to keep
// the Store's primary rows encrypted, and key an index by a blind value
// with [Table.IndexKey] (the Store then refuses copies that would hold an
// encrypted field in plaintext).
//
// Every validation error (a mistake in New's inputs, an invalid key, a
// value too large once encrypted, a filter on an encrypted field) matches
// [ErrInvalid] and [table.ErrInvalid]; an invalid key also matches
// [table.ErrInvalidKey].
//
// # When to use it
//
// For properties that must stay confidential from whoever can read the
// storage account (personal data, secrets, regulated identifiers) and
// that the application reads back whole or finds by exact value. Not for
// properties you filter by range, prefix or order (ciphertext has no
// order; keep such values plain or derive a coarse plain property), not
// for PartitionKey and RowKey (the service needs them: key your entities
// by ids that reveal nothing), and not as a substitute for access control.
// Service-side encryption at rest (always on in Azure Storage) protects
// the disks; this package protects the values from the service itself.
//
// # Threat model
//
// An attacker with read access to the storage account (or the service
// itself) sees, for every entity: its keys, its Timestamp, its plain
// properties, the names of its encrypted properties, which key id
// encrypted each value, each value's length rounded up to 16 bytes (the
// padding), whether an optional encrypted field (a nil pointer, a zero
// time, a nil slice) is set, and each blind index value, so also, between
// two versions of an entity, whether an indexed value changed. It does
// not see any plaintext of
// an encrypted property, nor can it tell two equal values apart from two
// different ones, except through a blind index.
//
// A blind index leaks equality and frequency: entities with the same
// normalized value of a field have the same blind value, so an attacker
// learns which entities share a value and how common each value is, and,
// for a field whose values are few or guessable (a yes/no, a country, a
// birth year), may infer values from their frequencies. It does not leak
// the value itself or its length, nor equality across fields (the field
// name is hashed in) or across index keys; without the index key an
// attacker cannot test a guess. The table name is not hashed in, so a
// value has the same blind value in every table that shares the index key
// (that is what lets secondaryindex copies live in another table). Index
// only fields you must look up by, and only values with enough variety.
//
// An attacker with write access cannot forge or alter a value (GCM's tag
// fails, ErrDecrypt) nor move one to another entity, property or table
// (the associated data binds it, ErrDecrypt). It can delete entities,
// delete an encrypted property, forge or corrupt a blind index (Find
// verifies each match by decrypting it, so a forged index hides an entity
// or makes Find skip it, never returns a wrong one), and roll a value
// back to an older ciphertext of the same property of the same entity:
// detect rollback at the application level (a version in an encrypted
// field) if it matters.
//
// Errors never carry plaintext, ciphertext or key bytes: they name the
// operation, the entity's keys, the property and the key id.
//
// # Trust
//
// Every value read is authenticated before use: its header is checked
// (format, a printable key id; a malformed one never reaches the
// KeyProvider), and AES-GCM with the associated data proves it was sealed
// with that key for this table, entity, and property. Find returns only
// rows it decrypted and whose value equals the one looked up, and skips
// any other row its query returns (see [Table.Find]); Get, Query and
// Modify return ErrDecrypt instead of a value that fails. A writer holding a SAS
// scoped to other partitions cannot read this partition's values, and
// cannot write it, and in its own partitions cannot produce a value that
// decrypts (it needs the data key) nor move one to another entity or
// property (the binding);
// it can plant rows in its own partitions with a copied blind value,
// which a Find or Where query whose scope includes those partitions
// reads: Find skips them, a Where query returns or fails on them. Give
// Find a PartitionKey where you can (an empty one scans every partition).
//
// # Format
//
// Each encrypted property is stored as one Edm.Binary value:
//
//	byte 0          format version, 1
//	byte 1          n, the length of the key id (1 to 255)
//	bytes 2..2+n    the key id, printable ASCII
//	next 12 bytes   the nonce, random for every value
//	the rest        AES-256-GCM ciphertext of the plaintext, then its 16-byte tag
//
// The plaintext is one type byte ('s' string, 'b' bool, 'i' Int32, 'l'
// Int64, 'd' Double, 't' DateTime, 'x' Binary, 'g' Guid), the value (UTF-8;
// 1 byte; 4 or 8 bytes big-endian; IEEE 754 bits; Unix seconds then
// nanoseconds; the bytes; the 16 bytes), then the byte 0x80 and zero bytes
// up to a multiple of 16. The value is typed as table.ToDynamic types the
// field, so every field type round-trips exactly: a `json` field is
// encrypted as its JSON text, a time in UTC at 100 ns. The associated
// data is the header's first 2+n bytes, then the table name in lower case
// (Options.TableName), the PartitionKey, the RowKey and the property name, each as
// a 4-byte big-endian length and the UTF-8 bytes.
//
// A stored value is 2 + n + 12 + 16 bytes longer than its plaintext plus
// 2 to 17 bytes (type byte and padding), and must fit an Edm.Binary's 64
// KiB: with a 2-byte key id a []byte of 65,502 bytes fits and one byte
// more is table.ErrTooLarge, refused before the network like every other
// limit the core checks (the 1 MiB entity counts the binary bytes). Each
// byte of key id takes one byte of that room, so a long key id (a Key
// Vault URL of 100 bytes) leaves about 100 bytes less. A string field is
// limited first by the core, before encryption, to 32,768 UTF-16 code
// units (an Edm.String's 64 KiB); encrypted, it is counted by its UTF-8
// bytes, so 32,768 ASCII characters fit but 32,768 characters of 3 UTF-8
// bytes each do not (table.ErrTooLarge).
//
// A blind value is the first 16 bytes of HMAC-SHA256(IndexKey,
// "tablekit/bidx/v1" || 4-byte length || field name || type byte || value)
// over the normalized value (Normalize for strings; every integer type as
// Int64), stored as 22 characters of unpadded base64url in its own string
// property (Index.Property, default Field + "_bidx"), never readable into
// T.
//
// # Consistency and merges
//
// The same as the core's verbs, which this package calls: one entity is
// strongly consistent, Update and Delete take an ETag, writes have the
// core's three outcomes and lost responses are settled by the core (pass
// the value read, with its table.Meta, to Update for exact verification).
//
// Each encrypted property is self-contained (its own header, nonce and
// associated data), so merges are safe:
//
//   - a merge that leaves an encrypted field out (a Fields merge not
//     naming it, or a Merge of a struct whose field is a nil pointer or
//     zero time) keeps the stored ciphertext and its blind index, which
//     still decrypt and match;
//   - a merge that sets it writes the new ciphertext and the new blind
//     index in the same request: Fields("Email") is extended to
//     Fields("Email", "Email_bidx");
//   - naming a blind index property in Fields, or a property T does not
//     have, is refused (ErrInvalid) before the network.
//
// Modify writes every field back under the current key (a Merge by
// default), so it also moves a row to the current key.
//
// Query filters compare stored values: an encrypted field's stored value
// is ciphertext, so filter on its blind index (Where, Find), never on
// the field. A filter that names an encrypted field would send its
// plaintext to the service and match nothing: Query, QueryEntities,
// QueryPage and Reencrypt refuse it before the network (ErrInvalid, also
// table.ErrInvalidFilter), wherever it sits in the filter
// ([table.Filter.Properties] lists every property a filter compares). Only
// Find verifies each match by decrypting it; a Query with a Where filter
// returns whatever the stored blind values match, so a forged or stale
// index row can add or hide entities there (and a row that fails to
// decrypt ends it with ErrDecrypt).
//
// # Cost in round trips
//
// Exactly the core's: encryption adds none.
//
//	Insert, Upsert, Update, Delete, Get     1 (+1 read to settle a lost response)
//	Modify                                  2, +2 per conflict
//	QueryPage; Query, QueryEntities, Find   1; 1 per page
//	InsertOps, UpsertOps, UpdateOps         0 (the change's transaction: as the core's)
//	Reencrypt                               1 per page + 1 per row rewritten (+2 per conflict)
//	Where, IndexKey                         0
//
// plus whatever the KeyProvider costs (StaticKeys: nothing; a Key Vault
// provider should cache unwrapped keys, below). Each value costs one
// AES-GCM seal or open (about a microsecond; BENCHMARKS.md).
//
// # Cosmos DB
//
// Supported, as the core is: a Table on the Cosmos DB Table API follows
// the table's [table.Profile]. Its queries return rows in no key order, so
// Query, QueryEntities and QueryPage return every row once in no order (a
// Limit caps how many, as in the core), Find returns exactly the matches
// (it promises no order), and Reencrypt visits every row page by page,
// which needs none. Sealed values are bounded by the profile's 64 KiB
// values; Cosmos DB reserves the property names id, rid, etag and
// resourceid (in any case), so a field named ID cannot be stored there.
//
// # Keys and rotation
//
// Data keys come from a KeyProvider: CurrentKey for writes, Key(id) for
// reads of any id. To rotate, make a new key current and keep the old
// ones readable: new writes (and Modify) use the new key, rows under old
// keys keep reading. Reencrypt then rewrites the rows still under other
// keys; when it reports Done with nothing Skipped, over the whole table,
// the old key can be retired. Use a key for at
// most 2^32 values (random 96-bit nonces; NIST SP 800-38D): rotate well
// before.
//
// The blind index key is separate (Options.IndexKey) and cannot rotate
// in place: a blind value under a new index key matches nothing stored
// under the old one. To change it (or a Normalize), build the Table with
// the new key and run Reencrypt with Indexes set, which recomputes every
// blind index; Find misses the rows not yet rewritten meanwhile.
//
// # Azure Key Vault
//
// Keep the data keys wrapped by a Key Vault key (envelope encryption),
// without this package depending on Key Vault:
//
//   - create a data key: 32 bytes from crypto/rand; wrap it with
//     azkeys.Client.WrapKey (RSA-OAEP-256 with an RSA key, or A256KW on a
//     Managed HSM) and store the wrapped bytes under a new key id, for
//     instance in a blob or a configuration row, never beside the data;
//   - implement KeyProvider: CurrentKey returns the configured current id
//     and its key; Key(ctx, id) reads the wrapped key for id, calls
//     UnwrapKey with ctx, and caches the result in memory (a map under a
//     mutex, or a sync.Map: a key id names one key forever, so the cache
//     never goes stale); an id with no wrapped key is ErrUnknownKey;
//   - the key id may carry the Key Vault key version that wrapped it, so
//     rotating the Key Vault key only re-wraps data keys, without
//     rewriting any row;
//   - keep IndexKey wrapped the same way, unwrapped once at start-up.
//
// # Re-encryption crash table
//
// Reencrypt reads a page, then rewrites each stale row with one merge of
// its encrypted and index properties conditioned on the row's ETag, then
// reports Progress with the page's cursor. Every write is one merge of one
// row, so a crash leaves each row whole, under the old or the new key:
//
//	stopped                                 state left                  repaired by
//	before a page is read                   rows as they were           re-running (from the last cursor)
//	between reading a page and a rewrite    the row under its old key   re-running: the row is read again
//	                                                                    and rewritten
//	a rewrite in flight (response lost)     the row under the old or    the core settles it by one read;
//	                                        the new key, whole          else re-running: a rewritten row
//	                                                                    is found current and skipped
//	after a rewrite, before Progress        the row under the new key   re-running from the earlier cursor
//	                                                                    skips it (one read, no write)
//	a concurrent writer between read and    the writer's version        nobody needed: the rewrite fails
//	rewrite                                                             with 412, the row is read again and
//	                                                                    rewritten only if still stale
//	after the last page                     every row under the         nothing; Progress.Done
//	                                        current key
//
// Re-running with the cursor of the last Progress is always safe, and so
// is re-running from the start (it only costs the reads). Reencrypt reads
// the current key once, when it starts: rows are rewritten under that key
// even if the KeyProvider's current key changes during the run.
package encryption
