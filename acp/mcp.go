package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"go.uber.org/zap"

	"github.com/dsh-acp/dsh-acp/internal/mcp"
	"github.com/dsh-acp/dsh-acp/presentation"
)

// mcpSpecs converts the client's mcpServers. An SSE or ACP server (not
// advertised) becomes a spec of that transport, which Start reports as
// unsupported.
func mcpSpecs(servers []sdk.McpServer) []mcp.Spec {
	specs := make([]mcp.Spec, 0, len(servers))
	for _, sv := range servers {
		switch {
		case sv.Stdio != nil:
			env := make([]string, 0, len(sv.Stdio.Env))
			for _, e := range sv.Stdio.Env {
				env = append(env, e.Name+"="+e.Value)
			}
			specs = append(specs, mcp.Spec{Name: sv.Stdio.Name, Transport: mcp.TransportStdio,
				Command: sv.Stdio.Command, Args: sv.Stdio.Args, Env: env})
		case sv.Http != nil:
			specs = append(specs, mcp.Spec{Name: sv.Http.Name, Transport: mcp.TransportHTTP, URL: sv.Http.Url,
				Headers: headers(sv.Http.Headers)})
		case sv.Sse != nil:
			specs = append(specs, mcp.Spec{Name: sv.Sse.Name, Transport: "sse", URL: sv.Sse.Url})
		case sv.Acp != nil:
			specs = append(specs, mcp.Spec{Name: sv.Acp.Name, Transport: "acp"})
		}
	}
	return specs
}

func headers(hs []sdk.HttpHeader) http.Header {
	if len(hs) == 0 {
		return nil
	}
	h := http.Header{}
	for _, x := range hs {
		h.Add(x.Name, x.Value)
	}
	return h
}

// sessionMCP is a session's MCP servers and the state of their tools in
// its toolbox.
type sessionMCP struct {
	servers *mcp.Servers

	mu     sync.Mutex
	synced bool // the toolbox holds the servers' tools once
}

// startMCP starts connecting ss's servers and, once the reply that opens
// the session is written, tells the user once of each server that could
// not be used. It never fails: a server that does not work is only
// missing its tools.
func (s *Server) startMCP(ss *session, servers []sdk.McpServer) {
	if len(servers) == 0 {
		return
	}
	s.begin() // signal handlers before any process (a session/new's did not wait)
	cfg := s.cfg.MCP
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	if cfg.ClientName == "" {
		cfg.ClientName, cfg.ClientVersion = s.cfg.Name, s.cfg.Version
	}
	m := &sessionMCP{servers: mcp.Start(cfg, ss.id, ss.cwd, mcpSpecs(servers))}
	ss.mu.Lock()
	ss.mcp = m
	ss.mu.Unlock()
	ss.afterOpen(func() { ss.reportMCP(m) })
}

// reportMCP waits for the connections and shows each failure once, unless
// the session closed meanwhile.
func (ss *session) reportMCP(m *sessionMCP) {
	<-m.servers.Done()
	for _, f := range m.servers.Failures() {
		ss.mu.Lock()
		closed := ss.closed
		ss.mu.Unlock()
		if closed {
			return
		}
		ss.present.Notice(presentation.NewNotice(presentation.SeverityWarning, fmt.Sprintf("MCP server %q is not available", f.Server),
			f.Reason+". Its tools are missing from this session."))
	}
}

// syncTools brings the session's toolbox up to date with its MCP servers
// before a turn: it waits for the connections (or for ctx), picks up
// announced tool list changes, and journals the Info of every tool it
// offers for the first time, so a reload draws its cards exactly.
func (ss *session) syncTools(ctx context.Context) {
	ss.mu.Lock()
	m := ss.mcp
	ss.mu.Unlock()
	if m == nil || !m.servers.Ready(ctx) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if changed := m.servers.Refresh(ctx); !changed && m.synced {
		return
	}
	learned, err := ss.box.Set(m.servers.Tools())
	if err != nil {
		ss.log.Error("mcp tools", zap.String("session", ss.id), zap.Error(err))
		return
	}
	m.synced = true
	names := make([]string, 0, len(learned))
	for name := range learned {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := ss.journal.AppendState(mcp.StateKey(name), learned[name]); err != nil {
			ss.log.Error("journal mcp tool", zap.String("session", ss.id), zap.Error(err))
		}
	}
}

// closeMCP stops the session's servers, bounded by ctx. Idempotent.
func (ss *session) closeMCP(ctx context.Context) {
	ss.mu.Lock()
	m := ss.mcp
	ss.mu.Unlock()
	if m != nil {
		m.servers.Close(ctx)
	}
}

// openSessions lists the open sessions.
func (s *Server) openSessions() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss)
	}
	return out
}

// closeAllMCP stops the servers of every session at once, bounded by ctx.
func closeAllMCP(ctx context.Context, sessions []*session) {
	var wg sync.WaitGroup
	for _, ss := range sessions {
		wg.Go(func() { ss.closeMCP(ctx) })
	}
	wg.Wait()
}

// learnState feeds a journaled MCP tool Info to the session's cards; it
// reports whether the record was one.
func (ss *session) learnState(key string, value json.RawMessage) bool {
	return ss.box.Cards().LearnState(key, value)
}
