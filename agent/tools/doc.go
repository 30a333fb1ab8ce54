// Package tools holds Switchboard's built-in agent tools: current_time and
// web_fetch (both agent.Repeatable: no side effects; built by their own
// constructors or together by New), and memory (NewMemory: the chat's
// long-term notes — save/search/list/forget, scoped to the calling session,
// not Repeatable since save and forget have effects), web_search
// (NewWebSearch, Repeatable) and the file tools read_file, write_file,
// edit_file, list_files and delete_file (NewFiles, files.go: the chat's
// workspace through the turn's overlay, agent/workspace.go). The schedule and send_message tools live with
// the scheduler in package heartbeat; the skill tool in agent/skills.
//
// Design decisions:
//
//   - Each built-in tool's arguments are one Go struct, the one its Call
//     decodes into; its JSON Schema is generated from that struct by
//     agent.MustArgsSchema (json tags name the properties, jsonschema tags
//     describe them, omitempty makes one optional) with enums and bounds
//     added by name, built once at first use. testdata/schemas holds what
//     the model is shown, checked by TestBuiltinToolSchemasUnchanged.
//
//   - current_time takes its default *time.Location and its clock (now func)
//     from the caller, so the answer is deterministic in tests and follows
//     bot.timezone in the daemon. It answers on one line that a person can
//     read and a model can parse (RFC 3339 first, then weekday, IANA zone,
//     abbreviation and UTC offset). Time zone data comes from the system or
//     from time/tzdata if the binary embeds it (the command should import
//     time/tzdata for scratch/distroless images).
//
//   - One HTTP client, guardedClient (newGuardedClient), is used by every
//     tool here that reaches the network (web_fetch, web_search): it checks
//     every request it sends, the first and each redirect, before sending,
//     and every connection again at connect time; it never uses a proxy from
//     the environment. No tool builds its own http.Client.
//
//   - web_fetch only ever issues GET requests (there is no method argument)
//     to http and https URLs. Its SSRF guard works at two points: before a
//     request (and before following each redirect) the host is resolved and
//     every address is classified, which gives the model a clear refusal; and
//     at connect time a net.Dialer Control function checks the address that
//     the socket is really connecting to, so DNS rebinding and redirects are
//     caught even if the earlier answer was different. Refused are loopback,
//     private (RFC 1918, fc00::/7), link-local (169.254/16 with the cloud
//     metadata address, fe80::/10), unspecified, multicast, carrier-grade NAT
//     (100.64/10), "this network" (0/8), benchmarking (198.18/15), reserved
//     (240/4) and IPv6 forms that embed a refused IPv4 address (mapped,
//     IPv4-compatible, NAT64, 6to4). Legacy numeric host forms that C
//     resolvers accept (0x7f.1, 2130706433, 0177.0.0.1) are decoded and
//     classified, and refused even when public since they only serve to
//     disguise an address. Proxies from the environment are never used: a
//     proxy would make the connect-time check see the proxy, not the target.
//     AllowPrivate turns the address guard off; AllowNetworks lets chosen
//     prefixes (say an intranet wiki) through while keeping the rest.
//
//   - The domain allowlist matches a host or any subdomain of an entry
//     (entry "example.com" allows "docs.example.com", never
//     "badexample.com"); it is checked for the first URL and for every
//     redirect target. At most 5 redirects are followed.
//
//   - Bodies are read through io.LimitReader (MaxBytes) and cut with a
//     "[truncated at N bytes]" notice. HTML is turned into text with
//     golang.org/x/net/html (see ExtractHTML); JSON, XML and text/* are
//     returned as they are; anything else is refused by content type. Bodies
//     are treated as UTF-8 (invalid sequences replaced); other charsets are
//     not converted, which keeps golang.org/x/text out of the build.
//     Keep-alives are off, so no idle connection goroutine outlives a call.
//
//   - web_search asks one provider chosen in config: the Brave Search API
//     (GET …/res/v1/web/search?q=&count=, key in X-Subscription-Token) or a
//     SearXNG instance's JSON API (GET <url>/search?q=&format=json). The
//     endpoint is the operator's, so its host is reached as configured, not
//     through web_fetch's address guard (a SearXNG on 127.0.0.1 or a compose
//     service name is normal). Nothing else is reached: the guarded client is
//     pinned to the endpoint's origin (scheme, host, port), so a redirect to
//     any other origin — a hostile or compromised backend pointing at
//     127.0.0.1:<other port> or the metadata address — is refused before it
//     is sent (agent.PermanentError, "redirected to … refused"), and the dialer
//     connects to the endpoint's host and port only. Of the two possible rules
//     (same origin only, or redirects through web_fetch's guard) this is the
//     stricter: not even a public host is reached by a redirect, so neither
//     the query nor the key leaves the configured origin. The Brave key is attached by
//     the client's transport to requests for that origin only, so no redirect
//     can carry it to another host (Go drops Authorization across hosts, not
//     custom headers). Results are title, URL (http/https only) and snippet
//     (HTML tags dropped, entities decoded), at most MaxResults (≤ 20),
//     each field bounded; the answer is read up to MaxBytes and refused
//     beyond. 401/403 and other 4xx are agent.PermanentError (a refused key
//     names the setting, never the key), 429 is an agent.TemporaryError, 5xx
//     and network errors are plain errors (retried: the tool is Repeatable).
//     The key never appears in an error, a log record or String/GoString;
//     error texts also go through internal/redact for URL credentials.
package tools
