module github.com/peerkit/terraform-provider-liqo/tools/terraform

go 1.25.0

require github.com/hashicorp/terraform v1.11.4

// Terraform's nested modules, at the pseudo-version of the v1.11.4 commit, and Terraform itself
// pinned for the nested modules that require it.
replace (
	github.com/hashicorp/terraform => github.com/hashicorp/terraform v1.11.4
	github.com/hashicorp/terraform/internal/backend/remote-state/azure => github.com/hashicorp/terraform/internal/backend/remote-state/azure v0.0.0-20250409131005-35645b8fca68
	github.com/hashicorp/terraform/internal/backend/remote-state/consul => github.com/hashicorp/terraform/internal/backend/remote-state/consul v0.0.0-20250409131005-35645b8fca68
	github.com/hashicorp/terraform/internal/backend/remote-state/cos => github.com/hashicorp/terraform/internal/backend/remote-state/cos v0.0.0-20250409131005-35645b8fca68
	github.com/hashicorp/terraform/internal/backend/remote-state/gcs => github.com/hashicorp/terraform/internal/backend/remote-state/gcs v0.0.0-20250409131005-35645b8fca68
	github.com/hashicorp/terraform/internal/backend/remote-state/kubernetes => github.com/hashicorp/terraform/internal/backend/remote-state/kubernetes v0.0.0-20250409131005-35645b8fca68
	github.com/hashicorp/terraform/internal/backend/remote-state/oss => github.com/hashicorp/terraform/internal/backend/remote-state/oss v0.0.0-20250409131005-35645b8fca68
	github.com/hashicorp/terraform/internal/backend/remote-state/pg => github.com/hashicorp/terraform/internal/backend/remote-state/pg v0.0.0-20250409131005-35645b8fca68
	github.com/hashicorp/terraform/internal/backend/remote-state/s3 => github.com/hashicorp/terraform/internal/backend/remote-state/s3 v0.0.0-20250409131005-35645b8fca68
	github.com/hashicorp/terraform/internal/legacy => github.com/hashicorp/terraform/internal/legacy v0.0.0-20250409131005-35645b8fca68
)
