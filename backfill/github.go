package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v74/github"
)

// GitHubConfig selects the deliveries a GitHub backfill lists.
type GitHubConfig struct {
	// Owner and Repo name the repository whose webhook HookID is backfilled.
	Owner, Repo string
	HookID      int64

	// Since lists only deliveries made at or after it. Zero lists every delivery
	// GitHub still keeps.
	Since time.Time

	// FailedOnly feeds only the deliveries GitHub recorded as failed (no 2xx). A
	// receiver that answered 2xx without recording (another receiver behind the same
	// URL, a misrouted proxy) is only caught when every delivery is fed, the default.
	FailedOnly bool

	// PageSize is the deliveries listed per request, at most 100.
	//
	// Defaults to 100.
	PageSize int
}

// GitHub is a Source of a repository webhook's deliveries, listed with go-github
// (GET /repos/{owner}/{repo}/hooks/{id}/deliveries), newest first. Each delivery's
// payload is fetched (GET .../deliveries/{delivery_id}) and fed under its
// X-GitHub-Delivery GUID, the id a webhook delivery and its redeliveries carry.
//
// It feeds the payload rather than asking GitHub to redeliver: a redelivery goes to
// the hook's configured URL and secret, which may be what was broken, is not recorded
// as a backfill, and cannot be checkpointed by what it did.
type GitHub struct {
	client *github.Client
	config GitHubConfig
	// seen holds the GUIDs fed by this run: a redelivery is listed as a delivery of its
	// own with the same GUID.
	seen map[string]bool
}

// NewGitHub returns a Source of the deliveries of config's hook.
func NewGitHub(client *github.Client, config GitHubConfig) (*GitHub, error) {
	if config.Owner == "" || config.Repo == "" || config.HookID <= 0 {
		return nil, errors.New("backfill: a GitHub backfill needs an owner, a repository and a hook id")
	}
	if config.PageSize <= 0 || config.PageSize > 100 {
		config.PageSize = 100
	}
	return &GitHub{client: client, config: config, seen: map[string]bool{}}, nil
}

// Provider returns "github".
func (*GitHub) Provider() string { return "github" }

// Name names the hook: "repo=owner/name hook=123".
func (g *GitHub) Name() string {
	name := fmt.Sprintf("repo=%s/%s hook=%d", g.config.Owner, g.config.Repo, g.config.HookID)
	if g.config.FailedOnly {
		name += " failed"
	}
	return name
}

// The cursor is GitHub's page cursor and the id of the last delivery fed on that
// page, "PAGE_CURSOR DELIVERY_ID"; the page's first request has an empty cursor.
func parseGitHubCursor(cursor string) (page string, after int64, err error) {
	if cursor == "" {
		return "", 0, nil
	}
	i := strings.LastIndexByte(cursor, ' ')
	if i < 0 {
		return "", 0, fmt.Errorf("backfill: GitHub cursor %q is not PAGE DELIVERY", cursor)
	}
	page = cursor[:i]
	after, err = strconv.ParseInt(cursor[i+1:], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("backfill: GitHub cursor %q: %w", cursor, err)
	}
	return page, after, nil
}

func gitHubCursor(page string, delivery int64) string {
	return page + " " + strconv.FormatInt(delivery, 10)
}

// Fetch lists the page of deliveries at cursor, leaves out those fed before it, and
// fetches the payload of each delivery to feed.
func (g *GitHub) Fetch(ctx context.Context, cursor string) (*Page, error) {
	pageCursor, after, err := parseGitHubCursor(cursor)
	if err != nil {
		return nil, err
	}
	list, resp, err := g.client.Repositories.ListHookDeliveries(ctx, g.config.Owner, g.config.Repo, g.config.HookID,
		&github.ListCursorOptions{Cursor: pageCursor, PerPage: g.config.PageSize})
	if err != nil {
		return nil, err
	}
	page := &Page{Cursor: gitHubCursor(resp.Cursor, 0), More: resp.Cursor != ""}
	skip := after != 0
	for _, d := range list {
		if skip {
			skip = d.GetID() != after
			continue
		}
		delivered := d.GetDeliveredAt().Time
		if !g.config.Since.IsZero() && delivered.Before(g.config.Since) {
			// Newest first: everything after this one is older still.
			page.More = false
			break
		}
		if g.seen[d.GetGUID()] || g.config.FailedOnly && d.GetStatusCode() >= 200 && d.GetStatusCode() < 300 {
			continue
		}
		ev, err := g.event(ctx, d.GetID())
		if err != nil {
			return nil, err
		}
		ev.Cursor = gitHubCursor(pageCursor, d.GetID())
		page.Events = append(page.Events, ev)
		g.seen[ev.ID] = true
	}
	return page, nil
}

// event fetches one delivery's payload and reads its id and type as the github
// provider reads a delivery's: X-GitHub-Delivery, and X-GitHub-Event followed by a dot
// and the payload's action when it has one.
func (g *GitHub) event(ctx context.Context, id int64) (Event, error) {
	d, _, err := g.client.Repositories.GetHookDelivery(ctx, g.config.Owner, g.config.Repo, g.config.HookID, id)
	if err != nil {
		return Event{}, fmt.Errorf("error fetching delivery %d: %w", id, err)
	}
	req := d.GetRequest()
	if req == nil || req.RawPayload == nil {
		return Event{}, fmt.Errorf("delivery %d has no request payload", id)
	}
	guid := req.GetHeader("X-GitHub-Delivery")
	if guid == "" {
		guid = d.GetGUID()
	}
	typ := req.GetHeader("X-GitHub-Event")
	if typ == "" {
		typ = d.GetEvent()
	}
	if guid == "" || typ == "" {
		return Event{}, fmt.Errorf("delivery %d has no GUID or event", id)
	}
	var body struct {
		Action *string `json:"action"`
	}
	if err := json.Unmarshal(*req.RawPayload, &body); err != nil {
		return Event{}, fmt.Errorf("delivery %d: payload is not a JSON object: %w", id, err)
	}
	if body.Action != nil && *body.Action != "" {
		typ += "." + *body.Action
	}
	return Event{ID: guid, Type: typ, Payload: *req.RawPayload, Created: d.GetDeliveredAt().Time}, nil
}
