// Package encryption is client-side property encryption for tablekit
// tables: chosen properties of an entity are encrypted with AES-256-GCM
// before they leave the process, so the service never sees them, and an
// optional blind index (HMAC-SHA256 of the normalized value) still finds
// entities by an encrypted value.
package encryption
