package probe

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// The JUnit XML of --junit: one test suite, one test case per scenario, the kind of
// file CI systems (GitHub Actions, GitLab, Jenkins) show as test results.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Time     float64      `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Time     float64     `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Classname string        `xml:"classname,attr"`
		Name      string        `xml:"name,attr"`
		Time      float64       `xml:"time,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
		Skipped   *junitSkipped `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	junitSkipped struct {
		Message string `xml:"message,attr"`
	}
)

// WriteJUnit writes the report as JUnit XML.
func (r *Report) WriteJUnit(w io.Writer) error {
	suite := junitSuite{Name: fmt.Sprintf("hookinbox probe %s %s", r.Provider, r.Target)}
	for _, s := range r.Scenarios {
		c := junitCase{Classname: "hookinbox.probe." + r.Provider, Name: s.Name, Time: s.Took.Seconds()}
		suite.Tests++
		suite.Time += c.Time
		switch {
		case s.Skipped != "":
			suite.Skipped++
			c.Skipped = &junitSkipped{Message: s.Skipped}
		case !s.Passed():
			suite.Failures++
			var details strings.Builder
			s.writeFailures(&details, 0)
			c.Failure = &junitFailure{Message: s.summary(), Type: s.Failures[0].Problem, Text: details.String()}
		default:
			c.SystemOut = fmt.Sprintf("%s: %d facts, %d deliveries, %d attempts (%s), p50 %s, p99 %s",
				s.About, s.Facts, s.Deliveries, s.Attempts, answers(s.Answers), round(s.P50), round(s.P99))
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := junitSuites{
		Name: "hookinbox probe", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped,
		Time: suite.Time, Suites: []junitSuite{suite},
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
