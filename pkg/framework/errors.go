package framework

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Permanent tells whether an apiserver refused a write for a reason retrying will not fix until the
// object or the server's configuration changes: invalid, forbidden, malformed, too large or not
// supported. Such failures are recorded as Events (retries still go on, with backoff).
func Permanent(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsNotAcceptable(err) ||
		apierrors.IsUnsupportedMediaType(err) || apierrors.IsMethodNotSupported(err)
}
