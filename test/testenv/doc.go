// Package testenv runs a real control plane on this machine, as processes: one etcd and two
// kube-apiservers separated by etcd prefix, "upstream" (playing the mailbox workspace) and
// "downstream" (playing the edge cluster), with client-certificate and token authentication, RBAC
// and service-account token issuing, plus a kube-controller-manager against downstream so that
// workloads get a real status there.
//
// Optionally (Options.KCP) it also runs kcp (the real upstream of a KubeStellar syncer, `make
// kcp-bins`) and makes KubeStellar-style mailbox workspaces in it (Env.SetUpKCPMailboxes; for one
// syncer serving many of them through an APIExport's virtual workspace, Env.SetUpKCPExport), and
// (Options.UpstreamControllers) the namespace controllers of a real cluster on upstream.
//
// # The node
//
// With Options.Node (the e2e suite and `make testenv`; root, `make node-bins`) the edge gets a real
// node, Env.Node, so that Pods run: containerd, runc and the CNI plugins from Debian's packages, a
// kubelet, kube-proxy (iptables mode) and a kube-scheduler of the apiservers' version, images built
// here (PauseImage, TestAppImage; Options.NodeImages adds more, e.g. the syncer's). What it sets, and
// why, is in docs/test-bed.md; in short:
//
//   - Each bed takes a slot n on the machine (nodenet.go) and with it a network namespace kst-<n>
//     holding containerd, the kubelet, kube-proxy, the pods' bridge and kube-proxy's rules, a veth
//     pair to the host (10.213.255.<4n+1> host side, <4n+2> the node), pods on 10.213.<n>.0/24, and
//     cgroups /sys/fs/cgroup/<hierarchy>/kst-<n>. kst-<n> has no default route: nothing a pod or an
//     image pull sends leaves the machine; an image that is not imported fails to pull at once.
//   - The servers then listen on the bed's address (Env.Address, the host side) instead of
//     127.0.0.1, never on every interface, and every URL and kubeconfig the environment writes names
//     it: pods reach the upstreams at those URLs, and the edge apiserver through the kubernetes
//     Service, whose endpoint the apiserver keeps (lease reconciler). The serving certificate covers
//     127.0.0.1, localhost, the bed's address, the Service's IP and names.
//   - The controller manager runs nodelifecycle (a new Node's not-ready taint is lifted); the edge
//     apiserver authorizes kubelets as nodes and reaches them at their InternalIP.
//   - containerd needs restrict_oom_score_adj on this kind of machine, the kubelet failCgroupV1:
//     false and the cgroupfs driver (cgroup v1, no systemd).
//
// Stop, and StopDir for `make testenv-down`, remove everything the node made: processes, containers
// and their shims, mounts under the state folder, the network namespaces (the pods' are mounts under
// the folder), and with kst-<n> the veth pair, the bridge, the iptables rules and the host route,
// then the cgroups and libcni's cached results. A later start first sweeps what a killed bed left
// behind, by slot record and by the kst- prefix.
//
// `make testenv` uses it through test/testenv/cmd (detached, state in .testenv/); the e2e tests use
// it from TestMain (state in a temporary folder). Stop kills exactly the processes Start started.
package testenv
