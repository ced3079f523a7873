package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fileConfig is the YAML document as written. Optional scalars are pointers, so that
// an explicit zero ("tolerance: 0") can be told from an absent key; durations are
// strings, parsed during validation where the key's path is known.
type fileConfig struct {
	DatabaseURL     string         `yaml:"database_url"`
	ListenerURL     string         `yaml:"listener_database_url"`
	SQLitePath      string         `yaml:"sqlite_path"`
	Listen          string         `yaml:"listen"`
	NATSURL         string         `yaml:"nats_url"`
	Endpoints       []fileEndpoint `yaml:"endpoints"`
	Worker          fileWorker     `yaml:"worker"`
	GroupCommit     fileGroups     `yaml:"group_commit"`
	Outbox          fileOutbox     `yaml:"outbox"`
	HTTP            fileHTTP       `yaml:"http"`
	Retention       fileRetention  `yaml:"retention"`
	Admin           fileAdmin      `yaml:"admin"`
	Console         fileConsole    `yaml:"console"`
	ShutdownTimeout *string        `yaml:"shutdown_timeout"`
	Roles           stringList     `yaml:"roles"`
	RecordRequests  *bool          `yaml:"record_requests"`
}

type fileEndpoint struct {
	Name        string     `yaml:"name"`
	Path        string     `yaml:"path"`
	Provider    string     `yaml:"provider"`
	SecretsEnv  stringList `yaml:"secrets_env"`
	SecretsFile stringList `yaml:"secrets_file"`
	// PublicKeys and PublicKeysEnv are the provider's public keys, for the schemes
	// signed with its private key (discord, sendgrid). Public keys are not secret,
	// so they may be written in the file.
	PublicKeys    stringList        `yaml:"public_keys"`
	PublicKeysEnv stringList        `yaml:"public_keys_env"`
	Mode          string            `yaml:"mode"`
	Handler       string            `yaml:"handler"`
	Tolerance     *string           `yaml:"tolerance"`
	Options       map[string]string `yaml:"options"`
	MaxBodyBytes  *int64            `yaml:"max_body_bytes"`
	Paused        bool              `yaml:"paused"`

	// Forward is the forward handler's sink.
	Forward *fileSink `yaml:"forward"`
	// Secret and Secrets are accepted only to refuse inline secrets with a message
	// that says what to do instead.
	Secret  yaml.Node `yaml:"secret"`
	Secrets yaml.Node `yaml:"secrets"`
}

type fileWorker struct {
	Concurrency      *int    `yaml:"concurrency"`
	BatchSize        *int    `yaml:"batch_size"`
	PollOnly         bool    `yaml:"poll_only"`
	Lease            *string `yaml:"lease"`
	MaxAttempts      *int    `yaml:"max_attempts"`
	StatementTimeout *string `yaml:"statement_timeout"`
	PollInterval     *string `yaml:"poll_interval"`
}

// fileGroups tunes the group commits of deliveries.
type fileGroups struct {
	Accept fileGroup `yaml:"accept"`
	Sync   fileGroup `yaml:"sync"`
}

type fileGroup struct {
	Flushers  *int `yaml:"flushers"`
	MaxBatch  *int `yaml:"max_batch"`
	QueueSize *int `yaml:"queue_size"`
}

type fileOutbox struct {
	Concurrency     *int      `yaml:"concurrency"`
	BatchSize       *int      `yaml:"batch_size"`
	Lease           *string   `yaml:"lease"`
	MaxAttempts     *int      `yaml:"max_attempts"`
	DeliveryTimeout *string   `yaml:"delivery_timeout"`
	PollInterval    *string   `yaml:"poll_interval"`
	Sink            *fileSink `yaml:"sink"`
}

// fileSink is a forward target as written: {url: ...} or {nats_subject: ...}, with
// its delivery options.
type fileSink struct {
	URL         *string  `yaml:"url"`
	NATSSubject *string  `yaml:"nats_subject"`
	Concurrency *int     `yaml:"concurrency"`
	Rate        *float64 `yaml:"rate"`
	Ordered     *bool    `yaml:"ordered"`
}

type fileRetention struct {
	Processed *string `yaml:"processed"`
	Interval  *string `yaml:"interval"`
	Payloads  *string `yaml:"payloads"`
}

type fileAdmin struct {
	TokenEnv string `yaml:"token_env"`
}

// stringList is a YAML sequence of strings that may also be written as one scalar:
// `secrets_env: STRIPE_WEBHOOK_SECRET`.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = stringList{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*l = list
	return nil
}

// decode parses data strictly: an unknown key is an error, and so is a second
// document. Errors name the key's path, found in the node tree.
func decode(file string, data []byte) (*fileConfig, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &Error{File: file, Reason: oneLine(err.Error())}
	}
	var fc fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil && !errors.Is(err, io.EOF) {
		return nil, decodeError(file, &root, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{File: file, Reason: "more than one YAML document"}
	}
	return &fc, nil
}

var (
	reUnknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)
	reLine         = regexp.MustCompile(`^line (\d+): (.*)$`)
	// reValue matches the value yaml quotes in a type error: it could be a secret
	// written where it does not belong, so it never reaches a message.
	reValue = regexp.MustCompile("`[^`]*` ?")
)

// decodeError turns yaml's multi-line unmarshal errors into one line naming the key.
func decodeError(file string, root *yaml.Node, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return &Error{File: file, Reason: oneLine(err.Error())}
	}
	msg := te.Errors[0]
	more := ""
	if len(te.Errors) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(te.Errors)-1)
	}
	if m := reUnknownField.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		key := m[2]
		if p := pathAt(root, line, key); p != "" {
			key = p
		}
		return &Error{File: file, Key: key, Reason: fmt.Sprintf("unknown key (line %s)%s", m[1], more)}
	}
	if m := reLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		reason := strings.ReplaceAll(reValue.ReplaceAllString(m[2], ""), "!!", "") + fmt.Sprintf(" (line %s)%s", m[1], more)
		return &Error{File: file, Key: pathAt(root, line, ""), Reason: reason}
	}
	return &Error{File: file, Reason: oneLine(reValue.ReplaceAllString(msg, "")) + more}
}

// pathAt returns the path ("endpoints[0].tolerance") of the deepest mapping key or
// sequence item that starts on line, or "". With key set, only a mapping key of that
// name matches.
func pathAt(n *yaml.Node, line int, key string) string {
	var best string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if k.Line == line && (key == "" || k.Value == key) {
					best = p
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if c.Line == line && c.Kind == yaml.ScalarNode && key == "" {
					best = p
				}
				walk(c, p)
			}
		}
	}
	walk(n, "")
	return best
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
