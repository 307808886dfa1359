package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/syncer/pkg/signature"
)

// signName is the binary's name for `kubectl kubestellar sign` (kubectl runs kubectl-kubestellar-sign).
const signName = "kubectl-kubestellar-sign"

// newSignCommand is `kubectl kubestellar sign`: it signs manifests for a syncer whose edge requires
// signatures (--signature-policy), writing each object with the annotation edge.kubestellar.io/signature.
func newSignCommand(name string, stdout io.Writer) *cobra.Command {
	var file, key, out string
	var claims signature.Claims
	cmd := &cobra.Command{
		Use:   name + " -f <manifest> --key <private key>",
		Short: "Sign manifests for an edge that verifies what it applies",
		Long: `Sign the objects of a manifest with an ed25519 private key (PEM, PKCS #8: openssl genpkey
-algorithm ed25519 -out key.pem; its public key, for the edge: openssl pkey -in key.pem -pubout).
Each object is written with the annotation edge.kubestellar.io/signature: the object as signed
(less status, server-owned metadata and the syncer's own annotations and labels) and its
signature. Apply the output to the mailbox as usual; a syncer run with --signature-policy=Enforce
and the public key in --signature-keys applies exactly what was signed, and nothing changed since.
With --targets and --serial the signature also binds the sync targets it is for and its place in
the object's history: a syncer applies it only at those targets and never below the serial it
applied last (--signature-policy=Strict requires both).`,
		Args:              cobra.NoArgs,
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kubestellar sign"},
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(*cobra.Command, []string) error {
			var c *signature.Claims
			if len(claims.Targets) > 0 || claims.Serial != 0 {
				c = &claims
			}
			return sign(file, key, out, c, stdout)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", `The manifest to sign ("-": standard input); YAML or JSON, several documents, Lists.`)
	cmd.Flags().StringVar(&key, "key", "", "The ed25519 private key, PEM (PKCS #8).")
	cmd.Flags().StringVarP(&out, "output", "o", "-", `Where to write the signed manifest ("-": standard output).`)
	cmd.Flags().StringSliceVar(&claims.Targets, "targets", nil, "Sign for these sync targets only (their names): another site's syncer does not apply the objects.")
	cmd.Flags().Int64Var(&claims.Serial, "serial", 0, "Sign as this version of each object (a positive number, higher for each new version, e.g. a release number or a time stamp): a syncer that applied a higher one refuses it (a rollback).")
	return cmd
}

// sign signs every object of file with the key at keyPath and writes them to out.
func sign(file, keyPath, out string, claims *signature.Claims, stdout io.Writer) error {
	if file == "" || keyPath == "" {
		return errors.New("-f <manifest> and --key <private key> are required (see --help)")
	}
	if claims != nil && claims.Serial < 0 {
		return errors.New("--serial must be positive")
	}
	pem, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("--key: %w", err)
	}
	key, err := signature.ParsePrivateKey(pem)
	if err != nil {
		return fmt.Errorf("--key %s: %w", keyPath, err)
	}
	in := io.Reader(os.Stdin)
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		in = f
	}
	var buf bytes.Buffer
	decoder := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(in), 4096)
	for n := 0; ; n++ {
		obj := map[string]interface{}{}
		if err := decoder.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("%s: document %d: %w", file, n+1, err)
		}
		if len(obj) == 0 {
			continue // an empty document
		}
		if err := signObject(obj, key, claims); err != nil {
			return fmt.Errorf("%s: document %d: %w", file, n+1, err)
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	if out == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644) //nolint:gosec // a manifest, as kubectl writes them
}

// signObject puts the signature annotation on obj, or on each item of a List.
func signObject(obj map[string]interface{}, key ed25519.PrivateKey, claims *signature.Claims) error {
	if items, ok := obj["items"].([]interface{}); ok && obj["kind"] == "List" {
		for i, item := range items {
			m, ok := item.(map[string]interface{})
			if !ok {
				return fmt.Errorf("item %d is not an object", i)
			}
			if err := signObject(m, key, claims); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		return nil
	}
	if obj["kind"] == nil || obj["apiVersion"] == nil {
		return errors.New("not a Kubernetes object (no apiVersion or kind)")
	}
	value, err := signature.SignWith(obj, key, claims)
	if err != nil {
		return err
	}
	meta, _ := obj["metadata"].(map[string]interface{})
	if meta == nil {
		meta = map[string]interface{}{}
		obj["metadata"] = meta
	}
	ann, _ := meta["annotations"].(map[string]interface{})
	if ann == nil {
		ann = map[string]interface{}{}
		meta["annotations"] = ann
	}
	ann[signature.Annotation] = value
	return nil
}
