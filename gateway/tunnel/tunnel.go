// Package tunnel runs a userspace WireGuard device (wireguard-go) on a TUN interface and
// configures it through wgctrl, which talks to the device's UAPI socket under
// /var/run/wireguard when the kernel has no WireGuard module.
package tunnel

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/ipc"
	"golang.zx2c4.com/wireguard/tun"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// MaxNameLen is the longest interface name the kernel accepts.
const MaxNameLen = 15

// SocketDir is where wireguard-go and wgctrl keep the UAPI sockets, one per interface name and
// shared by every network namespace of the host.
const SocketDir = "/var/run/wireguard"

// Device is a running wireguard-go device on its TUN interface.
type Device struct {
	name   string
	tun    tun.Device
	dev    *device.Device
	uapi   net.Listener
	wg     *wgctrl.Client
	closed sync.Once
	done   chan struct{}
	// peerKey is the public key of the configured peer, nil before the first Configure.
	peerKey *wgtypes.Key
	// port is the configured listen port, nil before the first Configure.
	port *int
}

// Peer is the one remote gateway of a tunnel.
type Peer struct {
	// PublicKey is the peer's WireGuard public key.
	PublicKey wgtypes.Key
	// Endpoint is where the peer listens; nil when it is unknown (the server's view of a client).
	Endpoint *net.UDPAddr
	// AllowedIPs are the networks routed to and accepted from the peer.
	AllowedIPs []net.IPNet
	// Keepalive is the persistent keepalive interval; zero turns it off.
	Keepalive time.Duration
}

// Config is the whole configuration of a device.
type Config struct {
	// PrivateKey is the device's private key.
	PrivateKey wgtypes.Key
	// ListenPort is the UDP port the device listens on; zero picks a free one.
	ListenPort int
	// Peer is the remote gateway.
	Peer Peer
}

// Create makes the TUN interface name with the given MTU in the caller's network namespace,
// starts wireguard-go on it and opens its UAPI socket. name must be at most MaxNameLen
// characters and unique on the host, as the socket path is shared across namespaces.
func Create(log logr.Logger, name string, mtu int) (*Device, error) {
	if name == "" || len(name) > MaxNameLen {
		return nil, fmt.Errorf("interface name %q: must be 1 to %d characters", name, MaxNameLen)
	}
	t, err := tun.CreateTUN(name, mtu)
	if err != nil {
		return nil, fmt.Errorf("creating TUN %s: %w", name, err)
	}
	// The kernel may adjust the name; the device reports the one it got.
	if real, err := t.Name(); err == nil {
		name = real
	}
	d := &Device{name: name, tun: t, done: make(chan struct{})}
	wgLog := &device.Logger{
		Verbosef: func(string, ...any) {},
		Errorf:   func(format string, args ...any) { log.V(1).Info("wireguard-go: " + fmt.Sprintf(format, args...)) },
	}
	d.dev = device.NewDevice(t, conn.NewDefaultBind(), wgLog)
	fileUAPI, err := ipc.UAPIOpen(name)
	if err != nil {
		d.dev.Close()
		return nil, fmt.Errorf("opening UAPI socket of %s: %w", name, err)
	}
	if d.uapi, err = ipc.UAPIListen(name, fileUAPI); err != nil {
		_ = fileUAPI.Close()
		d.dev.Close()
		return nil, fmt.Errorf("listening on UAPI socket of %s: %w", name, err)
	}
	go d.serveUAPI()
	if d.wg, err = wgctrl.New(); err != nil {
		d.Close()
		return nil, fmt.Errorf("opening wgctrl: %w", err)
	}
	return d, nil
}

func (d *Device) serveUAPI() {
	for {
		c, err := d.uapi.Accept()
		if err != nil {
			return
		}
		go d.dev.IpcHandle(c)
	}
}

// Name is the interface name.
func (d *Device) Name() string { return d.name }

// Configure sets the device's key, port and single peer through wgctrl. Reconfiguring the same
// peer (same public key) keeps its session; a peer with a new key replaces the old one.
func (d *Device) Configure(cfg Config) error {
	ka := cfg.Peer.Keepalive
	port := cfg.ListenPort
	peers := []wgtypes.PeerConfig{}
	if d.peerKey != nil && *d.peerKey != cfg.Peer.PublicKey {
		peers = append(peers, wgtypes.PeerConfig{PublicKey: *d.peerKey, Remove: true})
	}
	peers = append(peers, wgtypes.PeerConfig{
		PublicKey:                   cfg.Peer.PublicKey,
		Endpoint:                    cfg.Peer.Endpoint,
		ReplaceAllowedIPs:           true,
		AllowedIPs:                  cfg.Peer.AllowedIPs,
		PersistentKeepaliveInterval: &ka,
	})
	c := wgtypes.Config{PrivateKey: &cfg.PrivateKey, Peers: peers}
	// Setting the port rebinds the socket (and a client on port 0 would get a new one): only
	// when it changes.
	if d.port == nil || *d.port != port {
		c.ListenPort = &port
	}
	if err := d.wg.ConfigureDevice(d.name, c); err != nil {
		return fmt.Errorf("configuring %s through wgctrl: %w", d.name, err)
	}
	d.port = &port
	k := cfg.Peer.PublicKey
	d.peerKey = &k
	return nil
}

// ResetPeer removes the peer and adds it back, which drops its session: with a persistent
// keepalive, wireguard-go starts a new handshake at once. A client uses it when the tunnel
// stops answering (e.g. the server restarted and lost its session), instead of waiting for
// WireGuard's own 15-25 s recovery.
func (d *Device) ResetPeer(p Peer) error {
	if err := d.wg.ConfigureDevice(d.name, wgtypes.Config{Peers: []wgtypes.PeerConfig{{PublicKey: p.PublicKey, Remove: true}}}); err != nil {
		return fmt.Errorf("removing peer of %s: %w", d.name, err)
	}
	ka := p.Keepalive
	err := d.wg.ConfigureDevice(d.name, wgtypes.Config{Peers: []wgtypes.PeerConfig{{
		PublicKey: p.PublicKey, Endpoint: p.Endpoint, ReplaceAllowedIPs: true, AllowedIPs: p.AllowedIPs,
		PersistentKeepaliveInterval: &ka,
	}}})
	if err != nil {
		return fmt.Errorf("adding back peer of %s: %w", d.name, err)
	}
	return nil
}

// PeerState is what the device knows about its peer.
type PeerState struct {
	// LastHandshake is when the last handshake completed; zero if none did.
	LastHandshake time.Time
	// Endpoint is the peer's current endpoint, learned or configured.
	Endpoint *net.UDPAddr
	// ReceiveBytes and TransmitBytes count the peer's traffic.
	ReceiveBytes, TransmitBytes int64
}

// State reads the device's listen port and the state of its peer (zero when there is no peer).
func (d *Device) State() (port int, peer PeerState, err error) {
	dev, err := d.wg.Device(d.name)
	if err != nil {
		return 0, PeerState{}, fmt.Errorf("reading %s through wgctrl: %w", d.name, err)
	}
	if len(dev.Peers) > 0 {
		p := dev.Peers[0]
		peer = PeerState{LastHandshake: p.LastHandshakeTime, Endpoint: p.Endpoint, ReceiveBytes: p.ReceiveBytes, TransmitBytes: p.TransmitBytes}
	}
	return dev.ListenPort, peer, nil
}

// Done is closed when the device stops (Close, or the interface was deleted).
func (d *Device) Done() <-chan struct{} { return d.dev.Wait() }

// Close stops the device: the TUN interface disappears with its addresses and routes, and the
// UAPI socket is removed.
func (d *Device) Close() {
	d.closed.Do(func() {
		if d.wg != nil {
			_ = d.wg.Close()
		}
		_ = d.uapi.Close()
		d.dev.Close()
		// The listener unlinks the socket on close; remove it in case it did not.
		_ = os.Remove(SocketPath(d.name))
		close(d.done)
	})
}

// SocketPath is the UAPI socket path of the interface name.
func SocketPath(name string) string { return filepath.Join(SocketDir, name+".sock") }
