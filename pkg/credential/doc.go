// Package credential keeps the syncer's upstream credential alive. The token syncer-gen mints is a
// ServiceAccount token of the mailbox that expires; the Renewer asks the upstream for a new one
// (TokenRequest on that same ServiceAccount) when half of its life has gone (and up to a tenth more),
// so that a site that loses its upstream for up to four tenths of a lifetime still comes back by
// itself. Every upstream client
// takes the current token from the Renewer on each request, so a renewal needs no restart.
//
// A renewed token is stored at the edge, in a Secret of the syncer's namespace that the manifest
// creates empty and never fills (Store): re-applying the manifest or a helm upgrade leaves it alone,
// and a restarted syncer starts from whichever of the stored and the bootstrap token expires last.
// A token that is not a ServiceAccount token with an expiry (a client certificate, a legacy Secret
// token, an admin's) is used as it is and never renewed.
//
// The Renewer owns its metrics (the expiry and issue times of the token in use, and renewals by
// result) and tells how renewal goes (State), which the SyncerConfigs' conditions show; it decides
// nothing else about the syncer.
package credential
