package fabric

import (
	"context"
	"fmt"
	"os"

	"github.com/go-logr/logr"
)

// Dataplane applies Desired states to the network namespace of the calling thread.
type Dataplane struct {
	// Encap is the tunnels' encapsulation (DetectEncap's answer, or forced).
	Encap Encap
	// Port is the tunnels' UDP port; 0: DefaultPort.
	Port uint16
	// Log receives what changes (Info) and what did not (V(1)).
	Log logr.Logger
}

// New detects the encapsulation the kernel takes (logging a fallback to VXLAN) and returns a
// Dataplane using it on port port (0: DefaultPort).
func New(log logr.Logger, port uint16) (*Dataplane, error) {
	e, err := DetectEncap(log)
	if err != nil {
		return nil, err
	}
	return &Dataplane{Encap: e, Port: port, Log: log}, nil
}

func (d *Dataplane) port() uint16 {
	if d.Port == 0 {
		return DefaultPort
	}
	return d.Port
}

// Report counts what an Apply changed.
type Report struct {
	LinksCreated, LinksRemoved         int
	RoutesAdded, RoutesRemoved         int
	RulesAdded, RulesRemoved           int
	FirewallsWritten, FirewallsRemoved int
}

// Changed says whether anything changed.
func (r Report) Changed() bool { return r != Report{} }

// Apply makes the namespace hold exactly want: it creates or fixes the tunnel links, writes the
// nftables tables whose content differs, adds the missing routes and rules, and removes the
// fabric's links, tables, routes and rules that want does not hold. Applying the same want
// twice changes nothing the second time (the Report is empty).
func (d *Dataplane) Apply(ctx context.Context, want Desired) (Report, error) {
	var rep Report
	if err := want.Validate(); err != nil {
		return rep, fmt.Errorf("invalid fabric configuration: %w", err)
	}
	if d.Encap != EncapGeneve && d.Encap != EncapVXLAN {
		return rep, fmt.Errorf("encapsulation %q: must be %s or %s", d.Encap, EncapGeneve, EncapVXLAN)
	}
	// The links want does not hold go first: a tunnel renamed (a gateway's side that took over
	// upstream's names when the gateway it shared its node with went) keeps its ID, and the
	// kernel refuses a second link of the same ID and port.
	keep := map[string]bool{}
	for _, t := range want.Tunnels {
		keep[t.Name] = true
	}
	removed, err := pruneLinks(keep)
	rep.LinksRemoved = len(removed)
	if len(removed) > 0 {
		d.Log.Info("tunnel links removed", "links", removed)
	}
	if err != nil {
		return rep, err
	}
	for _, t := range want.Tunnels {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("applying the fabric: %w", err)
		}
		created, err := d.ensureTunnel(t)
		if err != nil {
			return rep, err
		}
		if created {
			rep.LinksCreated++
			d.Log.Info("tunnel link created", "link", t.Name, "encap", d.Encap, "id", t.ID, "remote", t.Remote.String(), "address", t.Address.String())
		}
	}
	if rep.FirewallsWritten, rep.FirewallsRemoved, err = syncFirewalls(want.Firewalls); err != nil {
		return rep, err
	}
	if rep.RoutesAdded, rep.RoutesRemoved, err = syncRoutes(want.Tables); err != nil {
		return rep, err
	}
	if rep.RulesAdded, rep.RulesRemoved, err = syncRules(want.Tables); err != nil {
		return rep, err
	}
	if rep.Changed() {
		d.Log.Info("fabric applied", "encap", d.Encap, "report", rep)
	} else {
		d.Log.V(1).Info("fabric unchanged", "tunnels", len(want.Tunnels), "tables", len(want.Tables), "firewalls", len(want.Firewalls))
	}
	return rep, nil
}

// RemoveAll removes everything the fabric made in the namespace: its tunnel links, nftables
// tables, routes and rules, whatever Desired made them.
func (d *Dataplane) RemoveAll(ctx context.Context) (Report, error) {
	return d.Apply(ctx, Desired{})
}

// DisableRPFilter turns reverse-path filtering off in the namespace (all and default), as
// upstream's gateway does: the answers of a node's pods come in on that node's tunnel link,
// while the routes back to them hang off a rule on the input interface that the kernel's
// reverse-path check does not match.
func DisableRPFilter() error {
	for _, p := range []string{"/proc/sys/net/ipv4/conf/all/rp_filter", "/proc/sys/net/ipv4/conf/default/rp_filter"} {
		if err := os.WriteFile(p, []byte("0\n"), 0o644); err != nil {
			return fmt.Errorf("disabling reverse-path filtering: %w", err)
		}
	}
	return nil
}
