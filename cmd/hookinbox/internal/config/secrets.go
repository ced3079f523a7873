package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookinbox/hookinbox/provider"
)

// placeholderSecret stands in for an endpoint's secrets when they are not resolved
// (operator commands): it satisfies every scheme's constructor, including those that
// expect a "whsec_" base64 key, and is never used to verify anything.
const placeholderSecret = "whsec_aG9va2luYm94LW9wZXJhdG9yLXBsYWNlaG9sZGVy"

// secrets returns the endpoint's secrets in order (secrets_env, then secrets_file)
// and where each came from. Secrets come only from the environment or from files,
// never from the config file itself.
func (v *validator) secrets(i int, fe *fileEndpoint) ([]string, []string, error) {
	if len(fe.PublicKeys) > 0 || len(fe.PublicKeysEnv) > 0 {
		k := "public_keys"
		if len(fe.PublicKeys) == 0 {
			k = "public_keys_env"
		}
		return nil, nil, v.keyError(fmt.Sprintf("endpoints[%d].%s", i, k),
			"provider %s is verified with a signing secret, not public keys; use secrets_env or secrets_file", fe.Provider)
	}
	if len(fe.SecretsEnv) == 0 && len(fe.SecretsFile) == 0 {
		return nil, nil, v.keyError(fmt.Sprintf("endpoints[%d].secrets_env", i),
			"required: name the environment variable that holds the signing secret (or use secrets_file)")
	}
	var secrets, sources []string
	for j, name := range fe.SecretsEnv {
		key := fmt.Sprintf("endpoints[%d].secrets_env[%d]", i, j)
		if name == "" {
			return nil, nil, v.keyError(key, "empty variable name")
		}
		sources = append(sources, "env "+name)
		if !v.opts.ResolveSecrets {
			secrets = append(secrets, placeholderSecret)
			continue
		}
		s, _ := v.opts.LookupEnv(name)
		if err := checkSecret(s); err != nil {
			return nil, nil, v.keyError(key, "environment variable %s %v", name, err)
		}
		secrets = append(secrets, s)
	}
	for j, path := range fe.SecretsFile {
		key := fmt.Sprintf("endpoints[%d].secrets_file[%d]", i, j)
		if path == "" {
			return nil, nil, v.keyError(key, "empty file name")
		}
		if !filepath.IsAbs(path) && v.file != "" {
			// Relative to the config file, so the config means the same from any
			// working directory.
			path = filepath.Join(filepath.Dir(v.file), path)
		}
		sources = append(sources, "file "+path)
		if !v.opts.ResolveSecrets {
			secrets = append(secrets, placeholderSecret)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, v.keyError(key, "cannot read secret file %s: %v", path, unwrapPathError(err))
		}
		// One trailing newline is how most tools write a file; anything else around
		// the secret would become part of the HMAC key and nothing would verify.
		s := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
		if err := checkSecret(s); err != nil {
			return nil, nil, v.keyError(key, "secret file %s %v", path, err)
		}
		secrets = append(secrets, s)
	}
	return secrets, sources, nil
}

func checkSecret(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("is empty or unset")
	case strings.TrimSpace(s) != s:
		return fmt.Errorf("has leading or trailing whitespace")
	}
	return nil
}

// publicKeys returns the public keys of an endpoint whose provider takes them
// (public_keys, then public_keys_env) and where each came from. Public keys are not
// secret and may be written in the file; when they come from the environment and
// Load does not resolve secrets, a placeholder key stands in for each.
func (v *validator) publicKeys(i int, fe *fileEndpoint) ([]string, []string, error) {
	if len(fe.SecretsEnv) > 0 || len(fe.SecretsFile) > 0 {
		k := "secrets_env"
		if len(fe.SecretsEnv) == 0 {
			k = "secrets_file"
		}
		return nil, nil, v.keyError(fmt.Sprintf("endpoints[%d].%s", i, k),
			"provider %s is verified with the provider's public keys, not a secret; use public_keys or public_keys_env", fe.Provider)
	}
	if len(fe.PublicKeys) == 0 && len(fe.PublicKeysEnv) == 0 {
		return nil, nil, v.keyError(fmt.Sprintf("endpoints[%d].public_keys", i),
			"required: the provider's public key (or public_keys_env, the environment variable that holds it)")
	}
	placeholder, _ := provider.PlaceholderPublicKey(fe.Provider)
	var keys, sources []string
	for j, k := range fe.PublicKeys {
		if err := checkSecret(k); err != nil {
			return nil, nil, v.keyError(fmt.Sprintf("endpoints[%d].public_keys[%d]", i, j), "%v", err)
		}
		keys = append(keys, k)
		sources = append(sources, fmt.Sprintf("config public_keys[%d]", j))
	}
	for j, name := range fe.PublicKeysEnv {
		key := fmt.Sprintf("endpoints[%d].public_keys_env[%d]", i, j)
		if name == "" {
			return nil, nil, v.keyError(key, "empty variable name")
		}
		sources = append(sources, "env "+name)
		if !v.opts.ResolveSecrets {
			keys = append(keys, placeholder)
			continue
		}
		s, _ := v.opts.LookupEnv(name)
		if err := checkSecret(s); err != nil {
			return nil, nil, v.keyError(key, "environment variable %s %v", name, err)
		}
		keys = append(keys, s)
	}
	return keys, sources, nil
}
