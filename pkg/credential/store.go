package credential

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Store keeps the renewed token where a restarted syncer finds it.
type Store interface {
	// Load is the token stored; "" when none is.
	Load(ctx context.Context) (string, error)
	// Save stores a token in place of the one stored.
	Save(ctx context.Context, token string) error
}

// TokenKey is the key of the token in the Secret of a SecretStore.
const TokenKey = "token"

// SecretStore stores the token in a Secret at the edge. The manifest and the chart create it empty,
// so that re-applying them leaves what the syncer stored; the syncer may only get and update that
// one Secret (create cannot be limited to a name), so a missing Secret is an error that says so.
type SecretStore struct {
	Secrets corev1client.SecretsGetter
	Secret  types.NamespacedName
}

// Load is the token in the Secret; "" when the Secret or its key is missing.
func (s SecretStore) Load(ctx context.Context) (string, error) {
	secret, err := s.Secrets.Secrets(s.Secret.Namespace).Get(ctx, s.Secret.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading the stored upstream token (Secret %s): %w", s.Secret, err)
	}
	return string(secret.Data[TokenKey]), nil
}

// Save writes the token into the Secret, by an update that fails on a concurrent change (another
// replica renewed at the same time: the caller loads what it stored).
func (s SecretStore) Save(ctx context.Context, token string) error {
	secrets := s.Secrets.Secrets(s.Secret.Namespace)
	secret, err := secrets.Get(ctx, s.Secret.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("storing the renewed upstream token: Secret %s does not exist (apply the syncer's manifest again: it creates it empty)", s.Secret)
	}
	if err == nil {
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[TokenKey] = []byte(token)
		_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("storing the renewed upstream token (Secret %s): %w", s.Secret, err)
	}
	return nil
}
