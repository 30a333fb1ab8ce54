package matrix

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"maunium.net/go/mautrix"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// This file is Matrix's part of `switchboard doctor` (Platform.Doctor):
// /account/whoami with the access token (the account and device it belongs
// to) and /versions (whether the server has the authenticated media
// endpoints attachments are downloaded from).

const tokenFix = "set MATRIX_ACCESS_TOKEN to an access token of the bot's account (Element: Settings → Help & About → Access Token; or POST /_matrix/client/v3/login)"

func doctorWhoami(ctx context.Context, s platform.Section, deps platform.Deps) platform.CheckResult {
	c := s.(*Config)
	shown := platform.ShownURL(c.Homeserver)
	fail := func(finding, fix string) platform.CheckResult {
		return platform.CheckResult{Status: platform.StatusFail, Finding: finding, Fix: fix}
	}
	if c.Homeserver == "" {
		return fail("channels.matrix is enabled but its homeserver is empty", "set channels.matrix.homeserver to the client-server base URL, e.g. https://matrix.example.org")
	}
	if !c.AccessToken.IsSet() {
		return fail("channels.matrix is enabled but its access_token is empty", tokenFix)
	}
	cli, err := mautrix.NewClient(c.Homeserver, "", c.AccessToken.Value())
	if err != nil {
		return fail(fmt.Sprintf("the homeserver URL %s is not usable: %s", shown, platform.OneLine(err.Error())), "set channels.matrix.homeserver to e.g. https://matrix.example.org")
	}
	cli.Client = deps.Client()
	who, err := cli.Whoami(ctx)
	if err != nil {
		if errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MMissingToken) {
			return fail(fmt.Sprintf("the homeserver %s rejected the access token", shown), tokenFix)
		}
		if what, fix, ok := platform.DescribeNetErr(ctx, err, shown, deps.Timeout); ok {
			return fail(what, fix+" (channels.matrix.homeserver)")
		}
		return fail(fmt.Sprintf("whoami at %s failed: %s", shown, platform.OneLine(err.Error())),
			"check channels.matrix.homeserver (the client-server base, not the server name: https://matrix.example.org) and MATRIX_ACCESS_TOKEN")
	}
	var f platform.Findings
	f.Add(platform.StatusOK, fmt.Sprintf("whoami at %s: the token belongs to %s (device %s)", shown, who.UserID, orNone(string(who.DeviceID))), "")
	if c.UserID != "" && string(who.UserID) != c.UserID {
		f.Add(platform.StatusFail, fmt.Sprintf("channels.matrix.user_id is %s but the token belongs to %s", c.UserID, who.UserID),
			"set channels.matrix.user_id to "+string(who.UserID)+" (or empty), or use a token of "+c.UserID)
	}
	if c.DeviceID != "" && who.DeviceID != "" && string(who.DeviceID) != c.DeviceID {
		f.Add(platform.StatusFail, fmt.Sprintf("channels.matrix.device_id is %s but the token belongs to device %s", c.DeviceID, who.DeviceID),
			"set channels.matrix.device_id to "+string(who.DeviceID)+" (or empty)")
	}
	if ok, err := authenticatedMedia(ctx, cli); err == nil && !ok {
		f.Add(platform.StatusWarn, fmt.Sprintf("the homeserver %s does not announce authenticated media (Matrix v1.11): attachments cannot be downloaded", shown),
			"upgrade the homeserver (Synapse 1.98+ has /_matrix/client/v1/media)")
	}
	return f.Result()
}

// authenticatedMedia reports whether /versions announces v1.11 or the
// stable MSC3916 flag.
func authenticatedMedia(ctx context.Context, cli *mautrix.Client) (bool, error) {
	var v struct {
		Versions         []string        `json:"versions"`
		UnstableFeatures map[string]bool `json:"unstable_features"`
	}
	_, err := cli.MakeFullRequest(ctx, mautrix.FullRequest{Method: http.MethodGet,
		URL: cli.BuildURL(mautrix.BaseURLPath{"_matrix", "client", "versions"}), ResponseJSON: &v})
	if err != nil {
		return false, err
	}
	if v.UnstableFeatures["org.matrix.msc3916.stable"] {
		return true, nil
	}
	return slices.ContainsFunc(v.Versions, func(s string) bool { return versionAtLeast(s, 1, 11) }), nil
}

// versionAtLeast reports whether "v1.12" is at least major.minor.
func versionAtLeast(s string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(strings.TrimPrefix(s, "v"), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
