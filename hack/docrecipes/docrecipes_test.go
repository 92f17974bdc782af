package docrecipes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every recipe an e2e spec runs is on the page, as the spec needs it.
func TestConnectPageHasEveryRecipe(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", ConnectPage))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Connect {
		if err := r.Check(string(data)); err != nil {
			t.Error(err)
		}
	}
}

func TestBlock(t *testing.T) {
	page := strings.Join([]string{
		"# Page", "## One", "```sh", "one", "```", "text", "```json", "{}", "```", "```sh", "two", "```",
		"## Two", "- item", "", "  ```js", "  three", "    indented", "  ```", "```sh", "four", "```",
	}, "\n")
	for _, tc := range []struct {
		r    Recipe
		want string
	}{
		{Recipe{Heading: "## One", Lang: "sh"}, "one\n"},
		{Recipe{Heading: "## One", Lang: "sh", N: 1}, "two\n"},
		{Recipe{Heading: "## One", Lang: "json"}, "{}\n"},
		{Recipe{Heading: "## Two", Lang: "js"}, "three\n  indented\n"},
		{Recipe{Heading: "## Two", Lang: "sh"}, "four\n"},
	} {
		got, err := tc.r.Block(page)
		if err != nil || got != tc.want {
			t.Errorf("%+v: got %q, %v; want %q", tc.r, got, err, tc.want)
		}
	}
	for _, r := range []Recipe{
		{Heading: "## One", Lang: "js"},       // not in its section (the next one has it)
		{Heading: "## One", Lang: "sh", N: 2}, // only two
		{Heading: "## Three", Lang: "sh"},     // no such heading
	} {
		if got, err := r.Block(page); err == nil {
			t.Errorf("%+v: got %q, want an error", r, got)
		}
	}
}
