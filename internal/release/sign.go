package release

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// ReadKey reads an armored OpenPGP private key and unlocks it with passphrase when it is
// encrypted. It returns the first key of the key ring, which must be able to sign.
func ReadKey(armored, passphrase []byte) (*openpgp.Entity, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("signing key: not an armored OpenPGP key: %w", err)
	}
	if len(ring) == 0 {
		return nil, errors.New("signing key: the armored block holds no key")
	}
	e := ring[0]
	if e.PrivateKey == nil {
		return nil, errors.New("signing key: this is a public key; give the armored private key (gpg --armor --export-secret-keys ID)")
	}
	if e.PrivateKey.Encrypted {
		if len(passphrase) == 0 {
			return nil, errors.New("signing key: the key is protected by a passphrase; set GPG_PASSPHRASE")
		}
		if err := e.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("signing key: wrong passphrase: %w", err)
		}
	}
	return e, nil
}

// NewThrowawayKey makes a new RSA signing key for tests and trial releases, named name; nothing
// should trust it.
func NewThrowawayKey(name string) (*openpgp.Entity, error) {
	e, err := openpgp.NewEntity(name, "throwaway release key", "", &packet.Config{
		Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048, DefaultHash: crypto.SHA256,
	})
	if err != nil {
		return nil, fmt.Errorf("throwaway signing key: %w", err)
	}
	return e, nil
}

// Sign returns the detached binary OpenPGP signature of data by key.
func Sign(key *openpgp.Entity, data []byte) ([]byte, error) {
	var sig bytes.Buffer
	if err := openpgp.DetachSign(&sig, key, bytes.NewReader(data), &packet.Config{DefaultHash: crypto.SHA256}); err != nil {
		return nil, fmt.Errorf("signing the checksums: %w", err)
	}
	return sig.Bytes(), nil
}

// PublicKey returns key's public key, armored, as a registry publishes it (gpg_public_keys'
// ascii_armor), and its key ID in hexadecimal (key_id).
func PublicKey(key *openpgp.Entity) (armored, keyID string, err error) {
	var b strings.Builder
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		return "", "", fmt.Errorf("public key: %w", err)
	}
	if err := key.Serialize(w); err != nil {
		return "", "", fmt.Errorf("public key: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", "", fmt.Errorf("public key: %w", err)
	}
	return b.String() + "\n", fmt.Sprintf("%016X", key.PrimaryKey.KeyId), nil
}
