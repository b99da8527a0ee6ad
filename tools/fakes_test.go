package tools_test

import "github.com/dsh-acp/dsh-acp/executor/executorfake"

// fakeWith is the shared fake executor, scripted by set.
func fakeWith(set func(*executorfake.Executor)) *executorfake.Executor {
	f := executorfake.New()
	set(f)
	return f
}
