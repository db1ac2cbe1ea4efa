package table

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/tablename"
	"github.com/tablekit/tablekit/retry"
)

// validTableName reports whether name is a valid table name: 3 to 63
// letters and digits, starting with a letter (case-insensitive; "tables" is
// reserved).
func validTableName(name string) error {
	if err := tablename.Check(name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEntity, err)
	}
	return nil
}

// tableBeingDeleted waits for a deleted table name to become usable: the
// service needs 40 s or more after a delete. About 3 minutes in all.
var tableBeingDeleted = retry.Policy{Default: time.Second, Min: time.Second, Max: 10 * time.Second, MaxRetries: 20}

// CreateTable creates the table called name if it does not exist. While the
// name still belongs to a table being deleted (409 TableBeingDeleted, which
// lasts 40 s or more after a delete), it waits and tries again, for up to
// about 3 minutes or until ctx ends. One round trip when nothing is in the
// way.
func CreateTable(ctx context.Context, svc *aztables.ServiceClient, name string) error {
	if err := validTableName(name); err != nil {
		return &Error{Op: "create table", Table: name, Err: err}
	}
	p := tableBeingDeleted
	p.Retryable = func(err error) bool {
		var re *azcore.ResponseError
		return errors.As(err, &re) && re.ErrorCode == "TableBeingDeleted"
	}
	err := p.Do(ctx, func(ctx context.Context) error {
		_, err := svc.CreateTable(ctx, name, nil)
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.ErrorCode == "TableAlreadyExists" {
			return nil
		}
		return err
	})
	// A *retry.Error: it names the attempts and wraps the last answer (and
	// the context's error when that ended the wait).
	return wrap("create table", name, "", "", err)
}

// DeleteTable deletes the table called name: one round trip, and the
// cheapest way to delete many entities (the guide's high-volume delete).
// ErrTableNotFound when it does not exist. The name cannot be reused for 40 s
// or more; use a fresh name for the next table.
//
// A delete whose responses were all lost (ErrOutcomeUnknown from the retry
// policy) is settled with one more round trip, a query of at most one row
// of the table. A table that is gone (404, or 409 TableBeingDeleted) is
// reported as a resend that answered 404 is: ErrTableNotFound (the
// caller's goal, the table gone, is reached) and still ErrOutcomeUnknown
// (this delete or another removed it), as Table.Delete reports an entity.
// A table that is still there settles nothing (an attempt the client gave
// up on may still reach the service later): the error stays
// ErrOutcomeUnknown, as it does when the query fails.
func DeleteTable(ctx context.Context, svc *aztables.ServiceClient, name string) error {
	if err := validTableName(name); err != nil {
		return &Error{Op: "delete table", Table: name, Err: err}
	}
	_, err := svc.DeleteTable(ctx, name, nil)
	err = wrap("delete table", name, "", "", err)
	var te *Error
	if !errors.As(err, &te) {
		return err
	}
	if te.StatusCode == http.StatusNotFound {
		te.Code = "TableNotFound" // Azurite says ResourceNotFound
		return err
	}
	if te.Unknown {
		if gone, qerr := tableGone(ctx, svc.NewClient(name)); qerr == nil && gone {
			te.StatusCode, te.Code = http.StatusNotFound, "TableNotFound"
			te.Err = fmt.Errorf("a query found the table gone after the response was lost: %w", te.Err)
		}
	}
	return err
}

// tableGone reports whether c's table no longer exists (404, or 409
// TableBeingDeleted): one query of at most one row, whose table name the
// service resolves as case-insensitively as it resolves a delete's.
func tableGone(ctx context.Context, c *aztables.Client) (bool, error) {
	one, sel := int32(1), "PartitionKey"
	_, err := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: &one, Select: &sel}).NextPage(ctx)
	var re *azcore.ResponseError
	switch {
	case err == nil:
		return false, nil
	case errors.As(err, &re) && (re.StatusCode == http.StatusNotFound || re.ErrorCode == "TableBeingDeleted"):
		return true, nil
	}
	return false, err
}

// ListTables returns the names of the tables whose names start with prefix
// ("" for all), in name order, one round trip per page. On a service that
// lists tables in no defined order (Profile.Sorted false: Cosmos DB, where
// an account holds at most a few hundred tables) every page is read before
// the first name is returned, sorted.
func ListTables(ctx context.Context, svc *aztables.ServiceClient, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		opts := &aztables.ListTablesOptions{}
		if prefix != "" {
			f := And(Ge("TableName", prefix), Lt("TableName", prefix+"{")).String() // '{' follows 'z'
			opts.Filter = &f
		}
		acct := accountOf(svc) // unknown: sorted here, as on Cosmos DB
		sorted := acct != nil && acct.profile.Sorted
		var names []string
		pager := svc.NewListTablesPager(opts)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield("", wrap("list tables", "", "", "", err))
				return
			}
			for _, t := range page.Tables {
				switch {
				case t.Name == nil:
				case !sorted:
					names = append(names, *t.Name)
				case !yield(*t.Name, nil):
					return
				}
			}
		}
		slices.Sort(names)
		for _, name := range names {
			if !yield(name, nil) {
				return
			}
		}
	}
}
