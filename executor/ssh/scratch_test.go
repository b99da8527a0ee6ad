package ssh

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/dsh-acp/dsh-acp/executor"
	"github.com/dsh-acp/dsh-acp/executor/engine"
	"github.com/dsh-acp/dsh-acp/internal/sshdtest"
)

func TestScratchTimeline(t *testing.T) {
	srv := sshdtest.Start(t)
	e := newTestExecutor(t, testConfig(t, srv))
	client, _ := gossh.Dial("tcp", srv.Addr, &gossh.ClientConfig{User: srv.User, Auth: []gossh.AuthMethod{gossh.PublicKeys(srv.ClientSigner)}, HostKeyCallback: gossh.FixedHostKey(srv.HostKey)})
	spec := executor.Spec{Command: "true", Workdir: "/", Timeout: time.Minute, Level: executor.LevelOff}
	e.Run(context.Background(), spec, nil)
	var hdr, exit, eof, bare []time.Duration
	for range 3 {
		st := time.Now()
		s, _ := client.NewSession()
		s.Run("true")
		s.Close()
		bare = append(bare, time.Since(st))
		st = time.Now()
		p, err := e.spawner.Spawn(engine.Command{Spec: spec, Env: []string{"PAGER=cat"}})
		if err != nil {
			t.Fatal(err)
		}
		hdr = append(hdr, time.Since(st))
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, p.Stderr()); close(done) }()
		go func() { io.Copy(io.Discard, p.Stdout()) }()
		p.Wait()
		exit = append(exit, time.Since(st))
		<-done
		eof = append(eof, time.Since(st))
		p.Release()
	}
	for _, x := range [][]time.Duration{bare, hdr, exit, eof} {
		slices.Sort(x)
		t.Log(x[len(x)/2])
	}
}
