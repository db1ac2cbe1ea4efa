// Package bloblog is the design guide's log data pattern (pattern 13).
package bloblog
