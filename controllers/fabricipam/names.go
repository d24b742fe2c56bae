package fabricipam

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/peerkit/terraform-provider-liqo/internal/consts"
)

// interfaceNameTries is how many random names InterfaceName tries before giving up.
const interfaceNameTries = 20

// InterfaceName returns current when set, else a new tunnel interface name (upstream's form:
// consts.FabricInterfacePrefix and 10 random characters, 15 in all, the longest a Linux
// interface name may be) that taken refuses.
func InterfaceName(current string, taken func(string) bool) (string, error) {
	if current != "" {
		return current, nil
	}
	for range interfaceNameTries {
		if name := consts.FabricInterfacePrefix + rand.String(10); !taken(name) {
			return name, nil
		}
	}
	return "", errors.New("no free tunnel interface name found")
}
