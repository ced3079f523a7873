package main

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/internal/testwait"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// The shipped alerts (deploy/prometheus/alerts.yaml) and Grafana dashboard
// (deploy/grafana/hookinbox.json) may only use metrics that serve's /metrics exports:
// every expression is parsed as PromQL and each metric it selects is looked up in a
// live scrape, taken after traffic that makes every family show.

// exportedNames returns the sample names of a scrape: each family's name, and a
// histogram's _bucket, _sum and _count, as PromQL selects them.
func exportedNames(t *testing.T, body string) map[string]bool {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	names := map[string]bool{}
	for name, f := range fams {
		names[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY {
			names[name+"_sum"], names[name+"_count"] = true, true
			if f.GetType() == dto.MetricType_HISTOGRAM {
				names[name+"_bucket"] = true
			}
		}
	}
	return names
}

// selectedMetrics returns the metric names expr selects. Grafana's interval
// variables are given a value first.
func selectedMetrics(expr string) ([]string, error) {
	for _, v := range []string{"$__rate_interval", "$__interval", "$__range"} {
		expr = strings.ReplaceAll(expr, v, "5m")
	}
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}

// unexported returns the expressions' metrics that the scrape does not export, with
// the expression each came from.
func unexported(exprs []string, exported map[string]bool) ([]string, error) {
	var missing []string
	for _, expr := range exprs {
		names, err := selectedMetrics(expr)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			missing = append(missing, "(no metric) in "+expr)
		}
		for _, n := range names {
			if !exported[n] {
				missing = append(missing, n+" in "+expr)
			}
		}
	}
	return missing, nil
}

// deployExprs returns every expression of the shipped alerts and dashboard.
func deployExprs(t *testing.T) (alerts, dashboard []string) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Expr)
		}
	}
	raw, err = os.ReadFile("../../deploy/grafana/hookinbox.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			dashboard = append(dashboard, tg.Expr)
		}
	}
	return alerts, dashboard
}

func TestDeploy_AlertsAndDashboardUseOnlyExportedMetrics(t *testing.T) {
	t.Parallel()
	alerts, dashboard := deployExprs(t)
	if len(alerts) < 6 || len(dashboard) < 20 {
		t.Fatalf("%d alert and %d dashboard expressions: the files did not parse as expected", len(alerts), len(dashboard))
	}
	rcv := newReceiver(t)
	// The e2e config's sync and async billing endpoints, and a forward endpoint.
	b := setupForward(t, strings.Replace(e2eConfig, "worker:", `  - name: gateway
    path: /webhooks/github
    provider: github
    secrets_env: [E2E_GITHUB_SECRET]
    mode: sync
    handler: forward
    forward: {url: "`+rcv.url()+`"}
worker:`, 1))
	p := b.serve(t)
	// The billing handler's insert of this customer's invoice fails.
	if _, err := b.db.Pool.Exec(context.Background(), `ALTER TABLE invoices ADD CONSTRAINT e2e_block CHECK (customer_id <> 'cus_blocked')`); err != nil {
		t.Fatal(err)
	}
	// A sync delivery, an async one whose handler fails every attempt (to review),
	// and a forwarded event the dispatcher delivers: every family then has a sample.
	b.send(t, p, "/webhooks/stripe", "--id", "evt_m_1", "--invoice", "in_m_1")
	b.send(t, p, "/webhooks/queue", "--id", "evt_m_2", "--invoice", "in_m_2", "--customer", "cus_blocked")
	mustRun(t, b.env, "send", "--url", p.url("/webhooks/github"), "--provider", "github", "--secret-env", "E2E_GITHUB_SECRET",
		"--file", "testdata/invoice_paid.json", "--id", "gh-m-1", "--type", "issues")
	testwait.Until(t, 60*time.Second, "a receipt put to review and a forwarded delivery", func() bool {
		return metric(t, p, `hookinbox_attempts_exhausted_total{endpoint="queue"}`) == 1 && len(rcv.received()) == 1 &&
			metric(t, p, `hookinbox_outbox_deliveries_total{result="delivered",sink="endpoint:gateway"}`) == 1
	})
	code, body := get(p.url("/metrics"))
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	exported := exportedNames(t, body)
	for name, exprs := range map[string][]string{"deploy/prometheus/alerts.yaml": alerts, "deploy/grafana/hookinbox.json": dashboard} {
		missing, err := unexported(exprs, exported)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, m := range missing {
			t.Errorf("%s uses %s, which /metrics does not export", name, m)
		}
	}
	// The check can fail: a metric that does not exist, and a histogram's bucket of a
	// counter, are reported.
	missing, err := unexported([]string{`rate(hookinbox_not_exported_total[5m])`, `hookinbox_deliveries_total_bucket`}, exported)
	if err != nil || len(missing) != 2 || !slices.ContainsFunc(missing, func(m string) bool { return strings.HasPrefix(m, "hookinbox_not_exported_total") }) {
		t.Fatalf("the check missed unexported metrics: %v %v", missing, err)
	}
}
