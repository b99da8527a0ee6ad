package replay_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/dsh-acp/dsh-acp/internal/event"
	"github.com/dsh-acp/dsh-acp/replay"
)

// A session is journaled by its one writer, then replayed as a stream: the
// Settler closes the call the daemon never finished before the events reach
// the emitter.
func ExampleStore_Stream() {
	state, _ := os.MkdirTemp("", "replay-example")
	defer os.RemoveAll(state)
	store, err := replay.OpenStore(state)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	id := replay.NewSessionID()
	j, err := store.Create(id, "/home/user/project", "1.0.0")
	if err != nil {
		panic(err)
	}
	args := json.RawMessage(`{"command":"sleep 100"}`)
	j.Append(event.UserPrompt{Text: "wait a while"})
	j.Append(event.ToolCall{ID: "call_1", Name: "bash", Args: args})
	j.Close() // the daemon stops before the command ends

	settler := replay.NewSettler(func(ev event.Event) error {
		switch e := ev.(type) {
		case event.UserPrompt:
			fmt.Println("prompt:", e.Text)
		case event.ToolCall:
			fmt.Println("call:", e.ID, string(e.Args))
		case event.ToolResult:
			fmt.Println("result:", e.ID, e.Result.Text)
		}
		return nil
	})
	warnings, err := store.Stream(id, func(r replay.Record) error {
		if r.Header != nil {
			fmt.Println("session in", r.Header.Cwd)
		}
		if r.Event != nil {
			return settler.Push(r.Event)
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	if err := settler.Close(); err != nil {
		panic(err)
	}
	fmt.Println("warnings:", len(warnings))
	// Output:
	// session in /home/user/project
	// prompt: wait a while
	// call: call_1 {"command":"sleep 100"}
	// result: call_1 interrupted: the daemon stopped while this command ran
	// warnings: 0
}
