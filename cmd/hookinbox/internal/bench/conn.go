package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/probe"
	"github.com/hookinbox/hookinbox/internal/sign"
)

// A poster sends one signed event and returns the status and the Hookinbox-Outcome
// (for a refusal, the start of the body).
type poster interface {
	post(ev event) (status int, outcome string, err error)
	close()
}

// newPoster returns one sender's poster: a connPoster for http:// URLs, net/http's
// client for the rest (https).
//
// Why a connPoster: the load generator shares the machine's cores with the server
// and the database it measures, so what it spends is taken from them. net/http's
// client spends per request two goroutine hand-offs (its read and write loops), a
// request object, a header map and a timer; on a 2-core machine that was about a
// third of the bench process's CPU at 32 senders. A connPoster writes the request
// in one buffer on its own kept-alive connection and reads the answer with
// net/http's own parser (http.ReadResponse), so it measures the same server for
// less. It sends one request at a time per connection (no pipelining), as a
// closed-loop sender does.
func newPoster(target string, signer sign.Signer, timeout time.Duration, client func() *http.Client) (poster, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("--url %s: %w", target, err)
	}
	if u.Scheme != "http" {
		return &clientPoster{client: client(), url: target, signer: signer}, nil
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	return &connPoster{url: target, addr: host, host: u.Host, path: u.RequestURI(), signer: signer, timeout: timeout}, nil
}

// clientPoster posts with a net/http client.
type clientPoster struct {
	client *http.Client
	url    string
	signer sign.Signer
}

// post sends ev signed now and reads the answer to the end, so that the connection
// is reused.
func (c *clientPoster) post(ev event) (int, string, error) {
	h, err := signedHeaders(c.url, c.signer, ev)
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(ev.body))
	if err != nil {
		return 0, "", err
	}
	req.Header = h
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	outcome, err := readOutcome(resp)
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, outcome, nil
}

func (c *clientPoster) close() {}

// connPoster posts HTTP/1.1 requests on one kept-alive connection, dialled when
// needed and dropped after any error or a Connection: close.
type connPoster struct {
	url, addr, host, path string
	signer                sign.Signer
	timeout               time.Duration

	conn net.Conn
	br   *bufio.Reader
	buf  bytes.Buffer
}

func (c *connPoster) post(ev event) (int, string, error) {
	h, err := signedHeaders(c.url, c.signer, ev)
	if err != nil {
		return 0, "", err
	}
	c.buf.Reset()
	c.buf.WriteString("POST ")
	c.buf.WriteString(c.path)
	c.buf.WriteString(" HTTP/1.1\r\nHost: ")
	c.buf.WriteString(c.host)
	c.buf.WriteString("\r\nUser-Agent: hookinbox-bench\r\nContent-Length: ")
	c.buf.WriteString(strconv.Itoa(len(ev.body)))
	c.buf.WriteString("\r\n")
	for k, vs := range h {
		for _, v := range vs {
			c.buf.WriteString(k)
			c.buf.WriteString(": ")
			c.buf.WriteString(v)
			c.buf.WriteString("\r\n")
		}
	}
	c.buf.WriteString("\r\n")
	c.buf.Write(ev.body)

	status, outcome, err := c.roundTrip()
	if err != nil {
		c.close()
	}
	return status, outcome, err
}

func (c *connPoster) roundTrip() (int, string, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
		if err != nil {
			return 0, "", err
		}
		c.conn = conn
		c.br = bufio.NewReaderSize(conn, 4096)
	}
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, "", err
	}
	if _, err := c.conn.Write(c.buf.Bytes()); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, "", err
	}
	outcome, err := readOutcome(resp)
	if err != nil {
		return 0, "", err
	}
	if resp.Close {
		c.close()
	}
	return resp.StatusCode, outcome, nil
}

func (c *connPoster) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn, c.br = nil, nil
	}
}

// signedHeaders returns the headers of ev signed now for url, with a JSON content
// type unless the signer sets another.
func signedHeaders(url string, signer sign.Signer, ev event) (http.Header, error) {
	return probe.SignedHeaders(url, signer, ev.body, ev.id, cmp.Or(ev.signType, ev.typ), time.Now())
}

// readOutcome reads resp's body to the end (so that its connection can be reused)
// and returns its Hookinbox-Outcome, or for a refusal the start of the body.
func readOutcome(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	var outcome string
	var err error
	if resp.StatusCode/100 == 2 {
		outcome = resp.Header.Get("Hookinbox-Outcome")
		if outcome == "" {
			outcome = strconv.Itoa(resp.StatusCode) // not a hookinbox server
		}
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		var b []byte
		b, err = io.ReadAll(io.LimitReader(resp.Body, 512))
		outcome = string(bytes.Join(bytes.Fields(b), []byte(" ")))
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return "", fmt.Errorf("error reading the answer: %w", err)
	}
	return outcome, nil
}
