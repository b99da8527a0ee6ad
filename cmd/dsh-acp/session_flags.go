package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-acp/dsh-acp/internal/agent"
)

// sessionFlags are the flags of a session's context: its window, when it
// compacts, and what its tokens cost.
type sessionFlags struct {
	window    string // --context-window: "N" or "model=N,…"
	threshold int    // --compact-threshold, in percent
	price     string // --price: "input=…,output=…[,cached=…][,currency=…]"
}

func (f *sessionFlags) register(fs *flag.FlagSet, env envLookup) {
	fs.StringVar(&f.window, "context-window", envOr(env, "DSH_CONTEXT_WINDOW", ""),
		"the model's context window in tokens, N for every model or MODEL=N,… per model (env DSH_CONTEXT_WINDOW; default: the built-in table, else 65536)")
	fs.IntVar(&f.threshold, "compact-threshold", envInt(env, "DSH_COMPACT_THRESHOLD", 80),
		"compact the conversation before a request past this percentage of the window, 10 to 95 (env DSH_COMPACT_THRESHOLD)")
	fs.StringVar(&f.price, "price", envOr(env, "DSH_PRICE", ""),
		"what the provider charges per million tokens, to report cost: input=P,output=P[,cached=P][,currency=USD] (env DSH_PRICE)")
}

func envInt(env envLookup, name string, def int) int {
	if v, err := strconv.Atoi(envOr(env, name, "")); err == nil {
		return v
	}
	return def
}

// agentConfig applies the flags to c, or says what is wrong with them.
func (f sessionFlags) agentConfig(c *agent.Config) error {
	var errs []error
	window, err := parseWindows(f.window)
	if err != nil {
		errs = append(errs, fmt.Errorf("--context-window: %w", err))
	}
	c.ContextWindow = window
	if f.threshold < 10 || f.threshold > 95 {
		errs = append(errs, fmt.Errorf("--compact-threshold must be between 10 and 95 (percent), got %d", f.threshold))
	}
	c.CompactThreshold = float64(f.threshold) / 100
	price, err := parsePrice(f.price)
	if err != nil {
		errs = append(errs, fmt.Errorf("--price: %w", err))
	}
	c.Price = price
	return errors.Join(errs...)
}

// minWindow is the smallest window accepted: below it the system prompt and
// tools alone would not fit.
const minWindow = 1024

// parseWindows reads "N" (every model) or "MODEL=N,MODEL=N" (others take
// agent.ContextWindow); "" is agent.ContextWindow.
func parseWindows(s string) (func(string) int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return agent.ContextWindow, nil
	}
	if n, err := parseTokens(s); err == nil || !strings.Contains(s, "=") {
		if err != nil {
			return nil, err
		}
		return func(string) int { return n }, nil
	}
	per := map[string]int{}
	for _, item := range strings.Split(s, ",") {
		model, num, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || strings.TrimSpace(model) == "" {
			return nil, fmt.Errorf("%q is not MODEL=TOKENS", item)
		}
		n, err := parseTokens(num)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", model, err)
		}
		per[strings.TrimSpace(model)] = n
	}
	return func(model string) int {
		if n, ok := per[model]; ok {
			return n
		}
		return agent.ContextWindow(model)
	}, nil
}

// parseTokens reads a token count: digits, maybe grouped by _ or with a
// k or m suffix ("128k", "1m").
func parseTokens(s string) (int, error) {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "_", ""))
	mult := 1
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1000, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mult, t = 1_000_000, strings.TrimSuffix(t, "m")
	}
	n, err := strconv.Atoi(t)
	if err != nil || n <= 0 || n > 1<<30/mult {
		return 0, fmt.Errorf("%q is not a token count (such as 131072 or 128k)", s)
	}
	if n*mult < minWindow {
		return 0, fmt.Errorf("%d tokens is too small a window (at least %d)", n*mult, minWindow)
	}
	return n * mult, nil
}

// parsePrice reads "input=P,output=P[,cached=P][,currency=C]"; "" is none.
func parsePrice(s string) (*agent.Price, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	p := &agent.Price{Currency: "USD"}
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("%q is not KEY=VALUE", item)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		seen[key] = true
		if key == "currency" {
			if len(val) != 3 {
				return nil, fmt.Errorf("currency %q is not an ISO 4217 code such as USD", val)
			}
			p.Currency = strings.ToUpper(val)
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || f < 0 {
			return nil, fmt.Errorf("%s=%q is not a price", key, val)
		}
		switch key {
		case "input":
			p.Input = f
		case "output":
			p.Output = f
		case "cached":
			p.CachedInput = f
		default:
			return nil, fmt.Errorf("unknown key %q (want input, output, cached, currency)", key)
		}
	}
	if !seen["input"] || !seen["output"] {
		return nil, errors.New("both input= and output= prices are needed")
	}
	return p, nil
}
