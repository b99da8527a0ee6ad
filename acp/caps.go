package acp

import (
	"context"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/rpc"
	"github.com/dsh-acp/dsh-acp/presentation"
	"github.com/dsh-acp/dsh-acp/tools"
)

// clientCaps is what the client said at initialize it can do: the one
// record of it, read by each session's presenter (how cards are drawn) and
// tools (which client methods a tool call may use). A new client
// capability is a field here, read in capsFrom, and — when tools may use
// it — a narrow interface in package tools that clientMethods implements
// and that is nil in tools.Session when the client lacks it.
type clientCaps struct {
	present             presentation.Caps
	readFile, writeFile bool // fs.readTextFile, fs.writeTextFile
}

func capsFrom(c sdk.ClientCapabilities) clientCaps {
	return clientCaps{present: presentation.CapsFrom(c), readFile: c.Fs.ReadTextFile, writeFile: c.Fs.WriteTextFile}
}

// files is what a session's tool calls can ask of the client's file
// methods; nil when it offers none.
func (c clientCaps) files(conn *rpc.Conn, sessionID string) tools.ClientFiles {
	if !c.readFile && !c.writeFile {
		return nil
	}
	return clientMethods{conn: conn, session: sdk.SessionId(sessionID), caps: c}
}

// clientMethods calls the client's methods for one session.
type clientMethods struct {
	conn    *rpc.Conn
	session sdk.SessionId
	caps    clientCaps
}

func (m clientMethods) ReadTextFile(ctx context.Context, path string) (string, error) {
	if !m.caps.readFile {
		return "", tools.ErrClientLacks
	}
	var resp sdk.ReadTextFileResponse
	err := m.conn.Call(ctx, sdk.ClientMethodFsReadTextFile, sdk.ReadTextFileRequest{SessionId: m.session, Path: path}, &resp)
	return resp.Content, err
}

func (m clientMethods) WriteTextFile(ctx context.Context, path, content string) error {
	if !m.caps.writeFile {
		return tools.ErrClientLacks
	}
	return m.conn.Call(ctx, sdk.ClientMethodFsWriteTextFile, sdk.WriteTextFileRequest{SessionId: m.session, Path: path, Content: content}, nil)
}
