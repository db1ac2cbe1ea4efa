// Package tablename holds the rule for a table's name, shared by the
// packages that check names before the network: patterns/table (create,
// delete, SAS) and patterns/transfer (the tables of a set, and names read
// back from an export).
package tablename

import (
	"fmt"
	"regexp"
	"strings"
)

var valid = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{2,62}$`)

// Check returns nil when name is a valid table name: 3 to 63 letters and
// digits, starting with a letter, and not "tables" (reserved, in any
// case). Else an error naming it (at most 70 characters of it, quoted).
func Check(name string) error {
	if !valid.MatchString(name) || strings.EqualFold(name, "tables") {
		return fmt.Errorf("table name %.70q: want 3-63 letters and digits, starting with a letter", name)
	}
	return nil
}
