module github.com/peerkit/terraform-provider-liqo/tools/terraform

go 1.25.8

require github.com/hashicorp/terraform v1.14.9

// Terraform's nested modules. The remote state backends are not served by the Go module proxy at
// v1.14.9's commit: build.sh generates a stand-in for each under stubs/ (ignored by git), which
// refuses that backend. internal/legacy, unchanged since, is the proxy's v1.11.4-era version.
replace (
	github.com/hashicorp/terraform/internal/backend/remote-state/azure => ./stubs/azure
	github.com/hashicorp/terraform/internal/backend/remote-state/consul => ./stubs/consul
	github.com/hashicorp/terraform/internal/backend/remote-state/cos => ./stubs/cos
	github.com/hashicorp/terraform/internal/backend/remote-state/gcs => ./stubs/gcs
	github.com/hashicorp/terraform/internal/backend/remote-state/kubernetes => ./stubs/kubernetes
	github.com/hashicorp/terraform/internal/backend/remote-state/oci => ./stubs/oci
	github.com/hashicorp/terraform/internal/backend/remote-state/oss => ./stubs/oss
	github.com/hashicorp/terraform/internal/backend/remote-state/pg => ./stubs/pg
	github.com/hashicorp/terraform/internal/backend/remote-state/s3 => ./stubs/s3
	github.com/hashicorp/terraform/internal/legacy => github.com/hashicorp/terraform/internal/legacy v0.0.0-20250409131005-35645b8fca68
)
