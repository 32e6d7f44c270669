package slurm

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// assoc is an association: an account (user == false) or a user association
// under an account. Index 0 is root.
type assoc struct {
	name     string // account or user name
	user     bool
	shares   float64
	parent   int32 // -1 for root
	children []int32
	usage    float64 // decayed raw usage (GPU-seconds), including descendants
	fs       float64 // fair-share factor (users only)
	lf       float64 // Fair Tree level fair share (scratch)
}

// assocTree is the association tree with usage and fair-share factors.
type assocTree struct {
	a        []assoc
	accounts map[string]int32 // account name -> index
	users    map[string][]int32
	nUsers   int
	fairTree bool
	damp     float64
}

func newTree(accts []AccountConf, fairTree bool, damp int) (*assocTree, error) {
	t := &assocTree{a: []assoc{{name: "root", parent: -1, shares: 1}}, accounts: map[string]int32{"root": 0},
		users: map[string][]int32{}, fairTree: fairTree, damp: float64(damp)}
	if err := t.addAccounts(0, "accounts", accts); err != nil {
		return t, err // the tree of the valid accounts, for further checks
	}
	return t, nil
}

func (t *assocTree) add(parent int32, x assoc) int32 {
	x.parent = parent
	i := int32(len(t.a))
	t.a = append(t.a, x)
	t.a[parent].children = append(t.a[parent].children, i)
	if x.user {
		t.nUsers++
		t.users[x.name] = append(t.users[x.name], i)
	} else {
		t.accounts[x.name] = i
	}
	return i
}

// addAccounts adds accts under parent, reporting every problem (errors.Join).
func (t *assocTree) addAccounts(parent int32, field string, accts []AccountConf) error {
	var errs []error
	for k, ac := range accts {
		f := fmt.Sprintf("%s[%d]", field, k)
		if ac.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: required", f))
			continue
		}
		if _, dup := t.accounts[ac.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: account %q defined twice", f, ac.Name))
			continue
		}
		sh := intOr(ac.Shares, 1)
		if sh < 0 {
			errs = append(errs, fmt.Errorf("%s.shares: must be >= 0", f))
		}
		i := t.add(parent, assoc{name: ac.Name, shares: float64(sh)})
		if err := t.addAccounts(i, f+".accounts", ac.Accounts); err != nil {
			errs = append(errs, err)
		}
		seen := map[string]bool{}
		for u, uc := range ac.Users {
			uf := fmt.Sprintf("%s.users[%d]", f, u)
			if uc.Name == "" {
				errs = append(errs, fmt.Errorf("%s.name: required", uf))
				continue
			}
			if seen[uc.Name] {
				errs = append(errs, fmt.Errorf("%s.name: user %q listed twice in account %q", uf, uc.Name, ac.Name))
				continue
			}
			seen[uc.Name] = true
			us := intOr(uc.Shares, 1)
			if us < 0 {
				errs = append(errs, fmt.Errorf("%s.shares: must be >= 0", uf))
			}
			t.add(i, assoc{name: uc.Name, user: true, shares: float64(us)})
		}
	}
	return errors.Join(errs...)
}

// userAssoc returns the user association of user under account acct (-1 if none).
func (t *assocTree) userAssoc(user string, acct int32) int32 {
	for _, i := range t.users[user] {
		if t.a[i].parent == acct {
			return i
		}
	}
	return -1
}

// charge adds usage (GPU-seconds) to association i and its ancestors.
func (t *assocTree) charge(i int32, u float64) {
	for ; i >= 0; i = t.a[i].parent {
		t.a[i].usage += u
	}
}

// decay multiplies every usage by f.
func (t *assocTree) decay(f float64) {
	for i := range t.a {
		t.a[i].usage *= f
	}
}

// levelShares is the sum of the shares of i's siblings (including i).
func (t *assocTree) levelShares(i int32) float64 {
	var s float64
	for _, c := range t.a[t.a[i].parent].children {
		s += t.a[c].shares
	}
	return s
}

// recompute sets every user's fair-share factor from the current usage.
func (t *assocTree) recompute() {
	if t.fairTree {
		t.fairTreeFS()
	} else {
		t.classicFS()
	}
}

// fairTreeFS implements Fair Tree (fair_tree.c, _calc_tree_fs): at each level
// LF = S/U with S the share among siblings and U the usage relative to the
// parent; siblings are visited by LF descending (users before accounts on equal
// LF, then configuration order), depth first; users get decreasing ranks and a
// user's factor is rank / number of users. Ties: a sibling with the same LF as
// the previous sibling is tied; a tied user keeps the previous rank, and a tied
// account passes the tie to its first child, so that child's top user shares
// the rank of the last user ranked before it. Slurm documents that tied sibling
// accounts have their children merged, but its _count_tied_accounts stops at
// the first account after the current one, so no merge ever happens; the
// accounts are walked one after the other, as here.
func (t *assocTree) fairTreeFS() {
	for i := 1; i < len(t.a); i++ {
		a := &t.a[i]
		S := 0.0
		if ls := t.levelShares(int32(i)); ls > 0 {
			S = a.shares / ls
		}
		U := 0.0
		if pu := t.a[a.parent].usage; pu > 0 {
			U = a.usage / pu
		}
		switch {
		case S == 0:
			a.lf = 0
		case U == 0:
			a.lf = math.Inf(1)
		default:
			a.lf = S / U
		}
	}
	rank, rnt := t.nUsers, t.nUsers
	t.ftLevel(slices.Clone(t.a[0].children), &rank, &rnt, false)
}

func (t *assocTree) ftLevel(sib []int32, rank, rnt *int, accountTied bool) {
	slices.SortStableFunc(sib, func(x, y int32) int {
		a, b := &t.a[x], &t.a[y]
		if a.lf != b.lf {
			if a.lf > b.lf {
				return -1
			}
			return 1
		}
		if a.user != b.user {
			if a.user {
				return -1
			}
			return 1
		}
		return 0
	})
	prev := math.NaN()
	for i, k := range sib {
		a := &t.a[k]
		tied := a.lf == prev
		if i == 0 {
			tied = accountTied
		}
		if a.user {
			if !tied {
				*rank = *rnt
			}
			a.fs = float64(*rank) / float64(max(t.nUsers, 1))
			*rnt--
		} else {
			t.ftLevel(slices.Clone(a.children), rank, rnt, tied)
		}
		prev = a.lf
	}
}

// classicFS implements classic fair share: F = 2^(-(UE/S)/dampening) with S the
// normalised shares (product down the tree), U = usage / root usage and the
// effective usage UE = U + (UE_parent - U) * shares / level shares (UE = U for
// children of root).
func (t *assocTree) classicFS() {
	n := len(t.a)
	normS := make([]float64, n)
	ue := make([]float64, n)
	normS[0] = 1
	root := t.a[0].usage
	// parents precede children in t.a (added depth first)
	for i := 1; i < n; i++ {
		a := &t.a[i]
		ls := t.levelShares(int32(i))
		if ls > 0 {
			normS[i] = normS[a.parent] * a.shares / ls
		}
		u := 0.0
		if root > 0 {
			u = a.usage / root
		}
		switch {
		case a.parent == 0:
			ue[i] = u
		case ls == 0:
			ue[i] = ue[a.parent]
		default:
			ue[i] = u + (ue[a.parent]-u)*a.shares/ls
		}
		if a.user {
			if normS[i] == 0 {
				a.fs = 0
			} else {
				a.fs = math.Pow(2, -(ue[i]/normS[i])/t.damp)
			}
		}
	}
}
