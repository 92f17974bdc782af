package tokenauth

import (
	"crypto/tls"
	"os"
	"sync"
	"time"
)

// KeyPair is a certificate and key read from files, read again when either changes (a
// rotated Secret). Its GetCertificate is for tls.Config.
type KeyPair struct {
	cert, key string
	mu        sync.Mutex
	mod       time.Time
	loaded    *tls.Certificate
}

// NewKeyPair reads certFile and keyFile now, so that a bad pair fails at start.
func NewKeyPair(certFile, keyFile string) (*KeyPair, error) {
	k := &KeyPair{cert: certFile, key: keyFile}
	if _, err := k.GetCertificate(nil); err != nil {
		return nil, err
	}
	return k, nil
}

// TLSConfig serves k (TLS 1.2 and later).
func (k *KeyPair) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: k.GetCertificate}
}

// GetCertificate returns the pair, re-read when a file changed; a half-written rotation
// keeps the old pair.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	mod := time.Time{}
	for _, f := range []string{k.cert, k.key} {
		fi, err := os.Stat(f)
		if err != nil {
			if k.loaded != nil {
				return k.loaded, nil
			}
			return nil, err
		}
		if fi.ModTime().After(mod) {
			mod = fi.ModTime()
		}
	}
	if k.loaded != nil && !mod.After(k.mod) {
		return k.loaded, nil
	}
	c, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		if k.loaded != nil {
			return k.loaded, nil // a half-written rotation: keep the old pair
		}
		return nil, err
	}
	k.loaded, k.mod = &c, mod
	return k.loaded, nil
}
