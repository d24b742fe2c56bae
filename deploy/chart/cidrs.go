package chart

// CIDRCase is a set of the chart's CIDR values (podCIDR, podCIDRs, serviceCIDR, externalCIDR,
// internalCIDR) and what the chart's install-time check of the internal CIDR (the template
// liqo.checkCIDRs) says of it.
type CIDRCase struct {
	Name                                    string
	PodCIDR                                 string
	PodCIDRs                                []string
	ServiceCIDR, ExternalCIDR, InternalCIDR string
	// Refused is what the install's error says; empty when the chart accepts the values.
	Refused string
	// ManagerOnly says the chart accepts values the manager refuses at start: a check left to
	// the manager (IPv6 text, pod CIDRs overlapping one another).
	ManagerOnly bool
}

// Values returns the case's chart values.
func (c CIDRCase) Values() map[string]any {
	v := map[string]any{"podCIDR": c.PodCIDR, "serviceCIDR": c.ServiceCIDR, "externalCIDR": c.ExternalCIDR, "internalCIDR": c.InternalCIDR}
	if len(c.PodCIDRs) > 0 {
		v["podCIDRs"] = c.PodCIDRs
	}
	return v
}

// ManagerArgs returns the manager's CIDR flags as the chart's Deployment passes the case's values.
func (c CIDRCase) ManagerArgs() []string {
	pods := c.PodCIDRs
	if len(pods) == 0 {
		pods = []string{c.PodCIDR}
	}
	var args []string
	for _, p := range pods {
		args = append(args, "--pod-cidr="+p)
	}
	return append(args, "--service-cidr="+c.ServiceCIDR, "--external-cidr="+c.ExternalCIDR, "--internal-cidr="+c.InternalCIDR)
}

// overlapFix ends the chart's message for an internal CIDR that overlaps another.
const overlapFix = ": the network fabric's internal CIDR must be a network of its own; " +
	"set internalCIDR (default 10.80.0.0/16) to a CIDR outside the pod, service and external CIDRs"

func notCIDR(value, cidr string) string {
	return value + ` "` + cidr + `" is not a network CIDR such as 10.244.0.0/16`
}

// CIDRCases are the chart's CIDR checks, case by case: each overlap of the internal CIDR,
// defaults, neighbours that do not overlap, and text that is no CIDR.
var CIDRCases = []CIDRCase{
	{Name: "defaults"},
	{Name: "a pod CIDR", PodCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/12"},
	{Name: "neighbours of the default internal CIDR", PodCIDR: "10.79.255.255/32", ServiceCIDR: "10.81.0.0/16", ExternalCIDR: "10.64.0.0/13"},
	{Name: "own internal CIDR inside the default's neighbourhood", PodCIDR: "10.80.0.0/16", InternalCIDR: "10.81.0.0/30"},
	{Name: "pod CIDRs listed with commas", PodCIDR: "10.244.0.0/16, 10.245.0.0/16"},
	{Name: "IPv6 pod CIDR", PodCIDRs: []string{"10.244.0.0/16", "fd00:10:244::/56"}},
	{Name: "pod CIDR over the default internal CIDR", PodCIDR: "10.80.0.0/12",
		Refused: "internalCIDR (default) 10.80.0.0/16 overlaps podCIDR 10.80.0.0/12" + overlapFix},
	{Name: "internal CIDR inside the pod CIDR", PodCIDR: "10.244.0.0/16", InternalCIDR: "10.244.128.0/17",
		Refused: "internalCIDR 10.244.128.0/17 overlaps podCIDR 10.244.0.0/16" + overlapFix},
	{Name: "second of podCIDRs", PodCIDRs: []string{"10.1.0.0/16", "10.80.5.0/24"},
		Refused: "internalCIDR (default) 10.80.0.0/16 overlaps podCIDRs 10.80.5.0/24" + overlapFix},
	{Name: "second of a comma-separated podCIDR", PodCIDR: "10.244.0.0/16,10.80.255.255/32",
		Refused: "internalCIDR (default) 10.80.0.0/16 overlaps podCIDR 10.80.255.255/32" + overlapFix},
	{Name: "service CIDR", PodCIDR: "10.244.0.0/16", ServiceCIDR: "10.64.0.0/10",
		Refused: "internalCIDR (default) 10.80.0.0/16 overlaps serviceCIDR 10.64.0.0/10" + overlapFix},
	{Name: "default external CIDR", InternalCIDR: "10.70.1.0/24",
		Refused: "internalCIDR 10.70.1.0/24 overlaps externalCIDR (default) 10.70.0.0/16" + overlapFix},
	{Name: "external CIDR", ExternalCIDR: "10.80.0.0/17",
		Refused: "internalCIDR (default) 10.80.0.0/16 overlaps externalCIDR 10.80.0.0/17" + overlapFix},
	{Name: "everything", PodCIDR: "0.0.0.0/0", Refused: "internalCIDR (default) 10.80.0.0/16 overlaps podCIDR 0.0.0.0/0" + overlapFix},
	{Name: "pod CIDR of three octets", PodCIDR: "10.0.0/8", Refused: notCIDR("podCIDR", "10.0.0/8")},
	{Name: "pod CIDR with host bits", PodCIDR: "10.244.0.1/16", Refused: notCIDR("podCIDR", "10.244.0.1/16")},
	{Name: "pod CIDR with a leading zero", PodCIDR: "010.244.0.0/16", Refused: notCIDR("podCIDR", "010.244.0.0/16")},
	{Name: "service CIDR octet over 255", ServiceCIDR: "300.0.0.0/8", Refused: notCIDR("serviceCIDR", "300.0.0.0/8")},
	{Name: "external CIDR of /33", ExternalCIDR: "10.70.0.0/33", Refused: notCIDR("externalCIDR", "10.70.0.0/33")},
	{Name: "internal CIDR no CIDR", InternalCIDR: "banana", Refused: notCIDR("internalCIDR", "banana")},
	{Name: "internal CIDR with host bits", InternalCIDR: "10.80.0.1/16", Refused: notCIDR("internalCIDR", "10.80.0.1/16")},
	{Name: "IPv6 internal CIDR", InternalCIDR: "fd00:80::/64", Refused: `internalCIDR "fd00:80::/64" is not an IPv4 network CIDR of /30 or larger`},
	{Name: "internal CIDR of /31", InternalCIDR: "10.80.0.0/31", Refused: `internalCIDR "10.80.0.0/31" is not an IPv4 network CIDR of /30 or larger`},
	{Name: "IPv6 text left to the manager", PodCIDR: "fd00::zz/64", ManagerOnly: true},
	{Name: "overlapping pod CIDRs left to the manager", PodCIDRs: []string{"10.1.0.0/16", "10.1.0.0/24"}, ManagerOnly: true},
}

// Refuses says whether the case's values are refused by the install.
func (c CIDRCase) Refuses() bool { return c.Refused != "" }
