package table

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/retry"
)

// ClientOptions returns aztables client options that use retry.Default in
// place of azcore's built-in retry: what tablekit's constructors use when
// given nil options. Adjust the result, or install another policy with
// retry.Policy.ApplyTo.
func ClientOptions() *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	retry.Default.ApplyTo(&o.ClientOptions)
	return o
}

// NewServiceClientFromConnectionString builds a table service client from
// a connection string (Azure Storage, Cosmos DB Table API, or an emulator
// with explicit endpoints). With nil opts it uses ClientOptions(): the
// guide's retry policy instead of azcore's. Options you pass are used as
// they are.
func NewServiceClientFromConnectionString(connStr string, opts *aztables.ClientOptions) (*aztables.ServiceClient, error) {
	if opts == nil {
		opts = ClientOptions()
	}
	return aztables.NewServiceClientFromConnectionString(connStr, opts)
}

// NewServiceClient builds a table service client for serviceURL that
// authenticates with cred (Microsoft Entra ID, from azidentity). With nil
// opts it uses ClientOptions().
func NewServiceClient(serviceURL string, cred azcore.TokenCredential, opts *aztables.ClientOptions) (*aztables.ServiceClient, error) {
	if opts == nil {
		opts = ClientOptions()
	}
	return aztables.NewServiceClient(serviceURL, cred, opts)
}

// NewClientFromSASURL builds a client for one table from a SAS URL (see
// SASURL). With nil opts it uses ClientOptions().
func NewClientFromSASURL(sasURL string, opts *aztables.ClientOptions) (*aztables.Client, error) {
	if opts == nil {
		opts = ClientOptions()
	}
	return aztables.NewClientWithNoCredential(sasURL, opts)
}
