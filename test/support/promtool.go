package support

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// PromtoolCheckRules runs `promtool check rules` on a rule file and returns promtool's output.
func PromtoolCheckRules(promtool, rules string) (string, error) {
	out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("promtool check rules %s: %w\n%s", rules, err, out)
	}
	return string(out), nil
}

// PromtoolTestRules runs `promtool test rules` on the unit tests in testFile against the rule file
// rules, each rule's annotations left out: promtool compares annotations word for word, and these
// tests are about expressions, `for` and labels (`promtool check rules` checks that the annotations'
// templates parse). The copies go to dir. It returns promtool's output.
func PromtoolTestRules(promtool, rules, testFile, dir string) (string, error) {
	var file struct {
		Groups []map[string]interface{} `json:"groups"`
	}
	data, err := os.ReadFile(rules)
	if err != nil {
		return "", err
	}
	if err := yaml.UnmarshalStrict(data, &file); err != nil {
		return "", fmt.Errorf("%s: %w", rules, err)
	}
	for _, g := range file.Groups {
		list, _ := g["rules"].([]interface{})
		for _, r := range list {
			if rule, ok := r.(map[string]interface{}); ok {
				delete(rule, "annotations")
			}
		}
	}
	if data, err = yaml.Marshal(file); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), data, 0o644); err != nil {
		return "", err
	}

	var tests map[string]interface{}
	if data, err = os.ReadFile(testFile); err != nil {
		return "", err
	}
	if err := yaml.Unmarshal(data, &tests); err != nil {
		return "", fmt.Errorf("%s: %w", testFile, err)
	}
	tests["rule_files"] = []string{"rules.yaml"} // relative to the test file
	if data, err = yaml.Marshal(tests); err != nil {
		return "", err
	}
	testCopy := filepath.Join(dir, "rules-test.yaml")
	if err := os.WriteFile(testCopy, data, 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command(promtool, "test", "rules", testCopy).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("promtool test rules %s (against %s): %w\n%s", testFile, rules, err, out)
	}
	return string(out), nil
}
