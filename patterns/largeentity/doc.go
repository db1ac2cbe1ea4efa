// Package largeentity is the design guide's large entities pattern.
package largeentity
