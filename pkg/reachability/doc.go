// Package reachability tells whether each side's apiserver answers, from the requests the syncer
// sends it (Tracker.Transport): a side is unreachable after a request got no response (a transport
// error), or while one has waited longer than HungAfter for its response (a hung apiserver accepts
// connections and answers nothing, so no error would ever say so). It gives every request but
// watches a RequestTimeout, so that a hung side cannot hold a worker for ever. It owns the gauge
// kubestellar_syncer_reachable. What to do when a side goes and comes back is its subscribers' own
// business (Tracker.Subscribe): it decides nothing else.
package reachability
