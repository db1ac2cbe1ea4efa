package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
)

// confidential is an employee whose email address the service never sees.
type confidential struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	Email      string
}

// encryptedEmail stores employees with their Email encrypted on the client
// and finds one again by its blind index.
func (t *tour) encryptedEmail(ctx context.Context) error {
	dataKey, indexKey := make([]byte, 32), make([]byte, 32)
	// In production: keys unwrapped from Key Vault (see the package docs).
	if _, err := rand.Read(dataKey); err != nil {
		return err
	}
	if _, err := rand.Read(indexKey); err != nil {
		return err
	}
	keys, err := encryption.NewStaticKeys("2026-11", map[string][]byte{"2026-11": dataKey})
	if err != nil {
		return err
	}
	tbl, err := table.New[table.Dynamic](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	staff, err := encryption.New[confidential](tbl, keys, []string{"Email"}, &encryption.Options{
		Indexes:  []encryption.Index{{Field: "Email", Normalize: encryption.TrimLower}},
		IndexKey: indexKey,
	})
	if err != nil {
		return err
	}
	for _, e := range []confidential{
		{Department: "Legal", ID: "000401", FirstName: "Ana", Email: "Ana.Diaz@contoso.com"},
		{Department: "Legal", ID: "000402", FirstName: "Ben", Email: "ben.ong@contoso.com"},
	} {
		if _, err := staff.Insert(ctx, e); err != nil {
			return err
		}
	}
	raw, err := table.NewClient(t.svc, t.name).GetEntity(ctx, "Legal", "000401", nil)
	if err != nil {
		return err
	}
	if strings.Contains(strings.ToLower(string(raw.Value)), "ana.diaz") {
		return fmt.Errorf("the stored entity holds the plaintext email")
	}
	t.say("2 inserts, 1 round trip each: Email stored as AES-256-GCM Edm.Binary (key id 2026-11 in its")
	t.say("header, bound to table, keys and property name), beside Email_bidx, an HMAC of the lower-cased address")
	var found []string
	for e, err := range staff.Find(ctx, "Legal", "Email", "  ANA.DIAZ@contoso.com") {
		if err != nil {
			return err
		}
		found = append(found, e.Value.FirstName+" <"+e.Value.Email+">")
	}
	if len(found) != 1 {
		return fmt.Errorf("blind-index lookup found %v", found)
	}
	t.say("Find of \"  ANA.DIAZ@contoso.com\": %v (1 query on Email_bidx, the match decrypted)", found)
	t.say("the service saw neither address; it can tell only which rows share an email (the blind index)")
	return nil
}
