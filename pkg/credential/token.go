package credential

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Token is a ServiceAccount token and what its claims say of it. The claims are read, not verified:
// the upstream verifies the token; the syncer only needs to know whose it is and when it expires.
type Token struct {
	// Value is the token itself, as sent in the Authorization header.
	Value string
	// ServiceAccount is the ServiceAccount the token authenticates as.
	ServiceAccount types.NamespacedName
	// UID is the ServiceAccount's UID and Issuer the token's issuer: a ServiceAccount deleted and made
	// anew under the same name is another identity, whose old tokens the upstream refuses.
	UID, Issuer string
	// Issued and Expires bound its life.
	Issued, Expires time.Time
}

// sameIdentity tells whether two tokens authenticate as the same ServiceAccount.
func (t Token) sameIdentity(o Token) bool {
	return t.ServiceAccount == o.ServiceAccount && t.UID == o.UID && t.Issuer == o.Issuer
}

// Lifetime is how long the token was issued for.
func (t Token) Lifetime() time.Duration { return t.Expires.Sub(t.Issued) }

// RenewAt is when half of the token's life has gone.
func (t Token) RenewAt() time.Time { return t.Issued.Add(t.Lifetime() / 2) }

// claims are the JWT claims of a ServiceAccount token the syncer reads.
type claims struct {
	Exp int64  `json:"exp"`
	Iat int64  `json:"iat"`
	Iss string `json:"iss"`
	K8s struct {
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// errNotRenewable says why a token cannot be renewed; the syncer then uses it as it is.
var errNotRenewable = errors.New("not a ServiceAccount token with an expiry")

// ParseToken reads a token's claims. A token that is not a JWT of a ServiceAccount with an expiry
// and an issue time (a legacy Secret token has neither) is errNotRenewable.
func ParseToken(value string) (Token, error) {
	parts := strings.Split(value, ".")
	if len(parts) != 3 {
		return Token{}, fmt.Errorf("%w: not a JWT", errNotRenewable)
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return Token{}, fmt.Errorf("%w: its claims are not base64url: %w", errNotRenewable, err)
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Token{}, fmt.Errorf("%w: its claims are not JSON: %w", errNotRenewable, err)
	}
	sa := types.NamespacedName{Namespace: c.K8s.Namespace, Name: c.K8s.ServiceAccount.Name}
	switch {
	case sa.Name == "" || sa.Namespace == "":
		return Token{}, fmt.Errorf("%w: it names no ServiceAccount", errNotRenewable)
	case c.Exp == 0 || c.Iat == 0 || c.Exp <= c.Iat:
		return Token{}, fmt.Errorf("%w: it has no expiry (a legacy Secret token?)", errNotRenewable)
	}
	return Token{Value: value, ServiceAccount: sa, UID: c.K8s.ServiceAccount.UID, Issuer: c.Iss, Issued: time.Unix(c.Iat, 0), Expires: time.Unix(c.Exp, 0)}, nil
}
