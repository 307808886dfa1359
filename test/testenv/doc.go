// Package testenv runs a real control plane on this machine, as processes on 127.0.0.1: one etcd and
// two kube-apiservers separated by etcd prefix, "upstream" (playing the mailbox workspace) and
// "downstream" (playing the edge cluster), with client-certificate and token authentication, RBAC
// and service-account token issuing, plus a kube-controller-manager against downstream so that
// workloads get a real status there.
//
// Optionally (Options.KCP) it also runs kcp (the real upstream of a KubeStellar syncer, `make
// kcp-bins`) and makes KubeStellar-style mailbox workspaces in it (Env.SetUpKCPMailboxes; for one
// syncer serving many of them through an APIExport's virtual workspace, Env.SetUpKCPExport), and
// (Options.UpstreamControllers) the namespace controllers of a real cluster on upstream.
//
// `make testenv` uses it through test/testenv/cmd (detached, state in .testenv/); the e2e tests use
// it from TestMain (state in a temporary folder). Stop kills exactly the processes Start started.
package testenv
