// Package cli is the toolgate command line: `toolgate call`, `get`, `describe`, `logs`,
// `approve`, `deny`, `tools` and `version`, also installed as the kubectl plugin
// `kubectl-toolgate`. cmd/toolgate only calls Execute.
//
// Every command is a constructor func(*Factory) *cobra.Command listed in root.go; the
// Factory turns the kubectl-style flags (--kubeconfig, --context, -n …) into a rest.Config,
// a namespace and an agentclient.Client carrying the caller's identity. Commands return
// errors made with Exit / Usagef (or any error, classified by ExitCodeOf), and Execute
// turns them into the documented exit codes. Formatting (tables, results, timelines) is
// done by pure functions, tested without a cluster.
package cli
