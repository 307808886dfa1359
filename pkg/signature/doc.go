// Package signature lets the edge require that what the syncer applies was signed by a key it
// trusts. A signer (kubectl kubestellar sign) puts on each object, as the user wrote it, the
// annotation edge.kubestellar.io/signature: the manifest it signed (the object less its status, the
// metadata a server owns and the annotations and labels of the syncer's own domain, which steer the
// syncer rather than describe the workload) and an ed25519 signature over that manifest's canonical
// JSON, with the id of the key. The syncer verifies the signature against the public keys held at
// the edge, then checks the stored object against the manifest as a subset: every field signed is
// there with the value signed, so that fields the apiserver defaults and the annotations kubectl
// adds do not break it, while a signed field changed, or a list grown, does. What is applied is then
// the signed manifest, never a field the signer did not sign.
//
// A signature may carry claims, signed with the manifest: the sync targets it is for, and a serial
// ordering the object's signed versions. The edge applies it only at those targets, records the
// serial on its copy and refuses a lower one (a rollback); Strict requires both claims.
//
// The policy (Off, Warn, Enforce, Strict) and the keys are set at the edge only, never by the
// mailbox. A key file that stops parsing trusts no key until it parses again (fail closed).
// The package decides nothing about syncing: downsync asks it, and says what it answered.
package signature
