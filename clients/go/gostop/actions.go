package gostop

import (
	"fmt"

	pb "github.com/gostop/gostop/clients/go/gen/gostop/v1"
)

// ActionID is the stable integer id of a structured action (the id of a LegalAction):
// PlayCard c → c, with shake 64 + c; Bomb m → 128 + m; FlipOnly 150; ChooseCapture c → 160 + c;
// KeepGukjin 220; ConvertGukjin 221; Go 230; Stop 231; JoinRound 240; SitOut 241;
// DeclineGwangSale 250; SellGwang 251.
func ActionID(a *pb.Action) (int32, error) {
	switch k := a.GetKind().(type) {
	case *pb.Action_PlayCard:
		if k.PlayCard.GetShake() {
			return 64 + k.PlayCard.GetCard(), nil
		}
		return k.PlayCard.GetCard(), nil
	case *pb.Action_Bomb:
		return 128 + k.Bomb.GetMonth(), nil
	case *pb.Action_FlipOnly:
		return 150, nil
	case *pb.Action_ChooseCapture:
		return 160 + k.ChooseCapture.GetCard(), nil
	case *pb.Action_KeepGukjin:
		return 220, nil
	case *pb.Action_ConvertGukjin:
		return 221, nil
	case *pb.Action_Go:
		return 230, nil
	case *pb.Action_Stop:
		return 231, nil
	case *pb.Action_JoinRound:
		return 240, nil
	case *pb.Action_SitOut:
		return 241, nil
	case *pb.Action_DeclineGwangSale:
		return 250, nil
	case *pb.Action_SellGwang:
		return 251, nil
	default:
		return 0, fmt.Errorf("not an action: %v", a)
	}
}
