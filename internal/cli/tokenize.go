package cli

import (
	"fmt"
	"strings"
)

// TokenizeCmd is `minfer tokenize`.
type TokenizeCmd struct {
	Model        string `arg:"" help:"GGUF model (or vocab-only GGUF) or plan file." type:"existingfile"`
	Text         string `arg:"" optional:"" help:"Text to tokenize (or --file)."`
	File         string `help:"Read the text from this file, byte for byte (- for standard input)."`
	AddSpecial   bool   `help:"Add BOS/EOS as the vocabulary asks." name:"add-special"`
	ParseSpecial bool   `help:"Recognize control tokens written as text." name:"parse-special"`
}

// Run prints the ids on one line.
func (c *TokenizeCmd) Run() error {
	text := c.Text
	if c.File != "" {
		var err error
		if text, err = readText(c.File, maxTextBytes, "tokenize reads at most 64 MiB"); err != nil {
			return err
		}
	}
	tok, err := loadTokenizer(c.Model)
	if err != nil {
		return err
	}
	ids := tok.Encode(text, c.AddSpecial, c.ParseSpecial)
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	fmt.Println(strings.Join(s, " "))
	return nil
}

// DetokenizeCmd is `minfer detokenize`.
type DetokenizeCmd struct {
	Model   string   `arg:"" help:"GGUF model or plan file." type:"existingfile"`
	IDs     []string `arg:"" help:"Token ids (space or comma separated)."`
	Special bool     `help:"Render control tokens as their text."`
}

// Run prints the text.
func (c *DetokenizeCmd) Run() error {
	tok, err := loadTokenizer(c.Model)
	if err != nil {
		return err
	}
	ids, err := parseIDs(strings.Join(c.IDs, " "))
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id < 0 || int(id) >= tok.NVocab() {
			return fmt.Errorf("token id %d is outside the vocabulary (0..%d)", id, tok.NVocab()-1)
		}
	}
	fmt.Print(tok.Detokenize(ids, false, c.Special))
	fmt.Println()
	return nil
}
