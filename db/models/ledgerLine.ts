import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';

/** What one run cost, on the ledger line of its channel; unique per run. */
export class LedgerLine extends Model<InferAttributes<LedgerLine>, InferCreationAttributes<LedgerLine>> {
  declare id: CreationOptional<number>;
  declare workspaceId: number;
  declare runId: number;
  declare line: string;
  declare credits: number;
  declare inputTokens: number;
  declare outputTokens: number;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    LedgerLine.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        workspaceId: { type: DataTypes.BIGINT, allowNull: false },
        runId: { type: DataTypes.BIGINT, allowNull: false },
        line: { type: DataTypes.TEXT, allowNull: false },
        credits: { type: DataTypes.BIGINT, allowNull: false },
        inputTokens: { type: DataTypes.INTEGER, allowNull: false },
        outputTokens: { type: DataTypes.INTEGER, allowNull: false },
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'ledger_lines', underscored: true, updatedAt: false },
    );
  }
}
