package registry

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// agent mirrors the registry's agent.schema.json; decoding rejects fields
// the schema does not know.
type agent struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository,omitempty"`
	Website      string       `json:"website,omitempty"`
	Authors      []string     `json:"authors,omitempty"`
	License      string       `json:"license,omitempty"`
	LicenseURL   string       `json:"license_url,omitempty"`
	Icon         string       `json:"icon,omitempty"`
	Distribution distribution `json:"distribution"`
}

type distribution struct {
	Binary map[string]binaryTarget `json:"binary,omitempty"`
	Npx    *packageDist            `json:"npx,omitempty"`
	Uvx    *packageDist            `json:"uvx,omitempty"`
}

type binaryTarget struct {
	Archive string            `json:"archive"`
	SHA256  string            `json:"sha256,omitempty"`
	Cmd     string            `json:"cmd"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

type packageDist struct {
	Package string            `json:"package"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// platforms are the registry's binary targets, with the GOOS and GOARCH
// that build each.
var platforms = map[string][2]string{
	"darwin-aarch64":  {"darwin", "arm64"},
	"darwin-x86_64":   {"darwin", "amd64"},
	"linux-aarch64":   {"linux", "arm64"},
	"linux-x86_64":    {"linux", "amd64"},
	"windows-aarch64": {"windows", "arm64"},
	"windows-x86_64":  {"windows", "amd64"},
}

var (
	idPattern      = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`)
	sha256Pattern  = regexp.MustCompile(`^[a-fA-F0-9]{64}$`)
	urlVersion     = regexp.MustCompile(`/(?:download|releases)/v?([\d.]+)/`)
)

func loadAgent(t *testing.T) agent {
	t.Helper()
	b, err := os.ReadFile("agent.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var a agent
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("agent.json does not fit the registry's schema: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatal("agent.json has data after its object")
	}
	// The registry requires distribution to be a non-empty object and
	// binary to be non-empty when present: check the raw form too.
	var raw struct {
		Distribution map[string]json.RawMessage `json:"distribution"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.Distribution) == 0 {
		t.Fatalf("distribution must be a non-empty object (%v)", err)
	}
	return a
}

func TestAgentJSONFitsTheRegistrySchema(t *testing.T) {
	a := loadAgent(t)
	for field, v := range map[string]string{"id": a.ID, "name": a.Name, "version": a.Version, "description": a.Description} {
		if strings.TrimSpace(v) == "" {
			t.Errorf("required field %s is empty", field)
		}
	}
	if !idPattern.MatchString(a.ID) {
		t.Errorf("id %q does not match %s", a.ID, idPattern)
	}
	if parts := strings.Split(a.Version, "."); !versionPattern.MatchString(a.Version) || len(parts) < 3 || !allDigits(parts[:3]) {
		t.Errorf("version %q is not a semantic version", a.Version)
	}
	for field, u := range map[string]string{"repository": a.Repository, "website": a.Website, "license_url": a.LicenseURL} {
		if u != "" && !isAbsURL(u) {
			t.Errorf("%s %q is not a URL", field, u)
		}
	}
	if len(a.Distribution.Binary) == 0 && a.Distribution.Npx == nil && a.Distribution.Uvx == nil {
		t.Fatal("no distribution")
	}
	for platform, target := range a.Distribution.Binary {
		if _, ok := platforms[platform]; !ok {
			t.Errorf("unknown platform %q", platform)
		}
		checkTarget(t, platform, target, a.Version)
	}
}

// taken is testdata/taken-ids.txt: the ids registry entries use, and the
// display names of those whose names were read, lower-cased.
func taken(t *testing.T) (ids, names map[string]bool) {
	t.Helper()
	b, err := os.ReadFile("testdata/taken-ids.txt")
	if err != nil {
		t.Fatal(err)
	}
	ids, names = map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, name, _ := strings.Cut(line, " | ")
		if !idPattern.MatchString(id) {
			t.Fatalf("taken-ids.txt: %q is not a registry id", id)
		}
		ids[id] = true
		if name != "" {
			names[strings.ToLower(name)] = true
		}
	}
	return ids, names
}

// The entry's id and display name are our own: no registry entry in the
// list of taken ids (testdata/taken-ids.txt) uses either.
func TestIDAndNameAreOurOwn(t *testing.T) {
	ids, names := taken(t)
	for _, id := range []string{"dsh-acp", "dsh-acp-interactive", "deepseek-acp", "deepseek-harness-acp"} {
		if !ids[id] {
			t.Fatalf("taken-ids.txt misses %s, an id known to be taken: the list does not read right", id)
		}
	}
	a := loadAgent(t)
	if ids[a.ID] {
		t.Errorf("id %q is taken by another registry entry", a.ID)
	}
	if names[strings.ToLower(a.Name)] {
		t.Errorf("display name %q is another registry entry's", a.Name)
	}
}

func checkTarget(t *testing.T, platform string, target binaryTarget, version string) {
	t.Helper()
	if !isAbsURL(target.Archive) {
		t.Errorf("%s: archive %q is not a URL", platform, target.Archive)
	}
	lower := strings.ToLower(target.Archive)
	for _, ext := range []string{".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage"} {
		if strings.HasSuffix(lower, ext) {
			t.Errorf("%s: installer format %s is not supported", platform, ext)
		}
	}
	if strings.Contains(target.Archive, "/latest/") {
		t.Errorf("%s: archive URL uses /latest/", platform)
	}
	if m := urlVersion.FindStringSubmatch(target.Archive); m == nil || strings.TrimSuffix(m[1], ".") != version {
		t.Errorf("%s: archive URL %q does not name version %s", platform, target.Archive, version)
	}
	if target.Cmd == "" {
		t.Errorf("%s: cmd is required", platform)
	}
	if target.SHA256 != "" && !sha256Pattern.MatchString(target.SHA256) {
		t.Errorf("%s: sha256 %q is not 64 hex digits", platform, target.SHA256)
	}
}

func allDigits(parts []string) bool {
	for _, p := range parts {
		if _, err := strconv.ParseUint(p, 10, 64); err != nil {
			return false
		}
	}
	return true
}

func isAbsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// Every archive .goreleaser.yaml builds is in agent.json, at its release
// download URL, and agent.json names no other.
func TestAgentJSONMatchesTheReleaseArchives(t *testing.T) {
	a := loadAgent(t)
	b, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := parseGoreleaser(t, string(b))
	if !slices.Equal(g.formats, []string{"tar.gz"}) {
		t.Fatalf("archive formats %v: this test knows tar.gz", g.formats)
	}
	built := map[string]bool{}
	for _, goos := range g.goos {
		for _, goarch := range g.goarch {
			built[goos+"/"+goarch] = true
		}
	}
	for platform, target := range a.Distribution.Binary {
		osArch := platforms[platform]
		if !built[osArch[0]+"/"+osArch[1]] {
			t.Errorf("%s: goreleaser builds no %s/%s", platform, osArch[0], osArch[1])
			continue
		}
		delete(built, osArch[0]+"/"+osArch[1])
		name := render(t, g.nameTemplate, map[string]string{
			"ProjectName": g.projectName, "Version": a.Version, "Os": osArch[0], "Arch": osArch[1],
		})
		want := fmt.Sprintf("https://github.com/%s/%s/releases/download/v%s/%s.tar.gz", g.owner, g.repo, a.Version, name)
		if target.Archive != want {
			t.Errorf("%s: archive %q, want %q", platform, target.Archive, want)
		}
		if target.Cmd != "./"+g.binary {
			t.Errorf("%s: cmd %q, want ./%s (the archive holds the binary at its top)", platform, target.Cmd, g.binary)
		}
	}
	for osArch := range built {
		t.Errorf("goreleaser builds %s, which agent.json does not list", osArch)
	}
}

// goreleaser is what the test reads from .goreleaser.yaml.
type goreleaser struct {
	projectName, binary, nameTemplate, owner, repo string
	goos, goarch, formats                          []string
}

// parseGoreleaser reads the few fields the test needs, by section and
// indentation (the file is small and written for it; no YAML library).
func parseGoreleaser(t *testing.T, y string) goreleaser {
	t.Helper()
	builds, archives, release := section(y, "builds"), section(y, "archives"), section(y, "release")
	g := goreleaser{
		projectName:  scalar(y, "project_name"),
		binary:       scalar(builds, "binary"),
		nameTemplate: scalar(archives, "name_template"),
		owner:        scalar(release, "owner"),
		repo:         scalar(release, "name"),
		goos:         list(builds, "goos"),
		goarch:       list(builds, "goarch"),
		formats:      list(archives, "formats"),
	}
	if g.projectName == "" || g.binary == "" || g.nameTemplate == "" || g.owner == "" || g.repo == "" ||
		len(g.goos) == 0 || len(g.goarch) == 0 || len(g.formats) == 0 {
		t.Fatalf(".goreleaser.yaml lacks a field the test reads: %+v", g)
	}
	return g
}

// section is the block under a top-level key, up to the next one.
func section(y, key string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(y, "\n") {
		top := line != "" && line[0] != ' ' && line[0] != '#'
		switch {
		case top && strings.HasPrefix(line, key+":"):
			in = true
		case top:
			in = false
		case in:
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// scalar is the first `key: value` in y, unquoted.
func scalar(y, key string) string {
	m := regexp.MustCompile(`(?m)^[\s-]*` + regexp.QuoteMeta(key) + `:\s*(.+?)\s*$`).FindStringSubmatch(y)
	if m == nil {
		return ""
	}
	return strings.Trim(m[1], `"'`)
}

// list is the `- item` lines under the first `key:` in y.
func list(y, key string) []string {
	lines := strings.Split(y, "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) != key+":" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		var items []string
		for _, l := range lines[i+1:] {
			trimmed := strings.TrimLeft(l, " ")
			if !strings.HasPrefix(trimmed, "- ") || len(l)-len(trimmed) < indent {
				break
			}
			items = append(items, strings.Trim(strings.TrimSpace(trimmed[2:]), `"'`))
		}
		return items
	}
	return nil
}

// render fills a goreleaser name template's {{ .Field }} references.
func render(t *testing.T, tmpl string, fields map[string]string) string {
	t.Helper()
	return regexp.MustCompile(`\{\{\s*\.(\w+)\s*\}\}`).ReplaceAllStringFunc(tmpl, func(ref string) string {
		name := regexp.MustCompile(`\w+`).FindString(ref)
		v, ok := fields[name]
		if !ok {
			t.Fatalf("name_template uses {{.%s}}, which this test does not know", name)
		}
		return v
	})
}

// The icon is what the registry's validator accepts: an <svg> of 16×16,
// square, painted only with currentColor (or none/inherit), no comments.
func TestIcon(t *testing.T) {
	b, err := os.ReadFile("icon.svg")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("<!--")) {
		t.Error("icon.svg has a comment")
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var (
		root         *xml.StartElement
		currentColor bool
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("icon.svg is not XML: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == nil {
			e := el.Copy()
			root = &e
		}
		if el.Name.Local == "style" {
			t.Error("icon.svg has a <style> element; paint with attributes")
		}
		for _, at := range el.Attr {
			switch at.Name.Local {
			case "fill", "stroke":
				v := strings.ToLower(strings.TrimSpace(at.Value))
				if v == "currentcolor" {
					currentColor = true
				} else if v != "none" && v != "inherit" {
					t.Errorf("<%s %s=%q>: only currentColor, none or inherit", el.Name.Local, at.Name.Local, at.Value)
				}
			case "style":
				if strings.Contains(at.Value, "fill") || strings.Contains(at.Value, "stroke") {
					t.Errorf("<%s style=%q>: paint with fill and stroke attributes", el.Name.Local, at.Value)
				}
			}
		}
	}
	if root == nil || root.Name.Local != "svg" {
		t.Fatal("icon.svg's root is not <svg>")
	}
	attr := func(name string) string {
		for _, a := range root.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	w, h := attr("width"), attr("height")
	if w == "" || h == "" {
		if vb := strings.Fields(attr("viewBox")); len(vb) == 4 {
			w, h = vb[2], vb[3]
		}
	}
	if w != "16" || h != "16" {
		t.Errorf("icon is %s×%s, want 16×16", w, h)
	}
	if !currentColor {
		t.Error("icon.svg does not use currentColor")
	}
}
